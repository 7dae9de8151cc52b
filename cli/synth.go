package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png/criterion"
)

var synthCommand = withConfig(&ucli.Command{
	Name:  "synth",
	Usage: "run PNG on the paper's synthetic problems (exp2, zdt2v)",
	Description: `Trains one model (or --models N together) of a synthetic two-task problem
with plain gradient steps along the PNG (or MGD, or linear) direction, and
prints the final losses, criterion and g(θ). --trace and --plot record the
trajectory; --json prints one JSON object.`,
	Flags: []ucli.Flag{
		&ucli.StringFlag{Name: "problem", Value: "exp2", Usage: "the problem by `NAME`: " + strings.Join(synthetic.Names, " or "), Category: "Problem"},
		&ucli.StringFlag{Name: "init", Usage: "initial θ, `X1,X2,...`", DefaultText: "the paper's 0.6,-0.3,…,-0.3", Category: "Problem"},
		&ucli.IntFlag{Name: "models", Value: 1, Usage: "train `N` models together (multi-point PNG; use --criterion energy)", Category: "Problem"},
		&ucli.Float64Flag{Name: "spread", Value: job.SynthSpread, Usage: "with --models: size `S` of the seeded noise around --init", Category: "Problem"},
		criterionFlag, methodFlag, weightsFlag, preferenceFlag, mgdStepsFlag, alphaFlag, gammaFlag(job.SynthGamma),
		lrFlag(job.SynthLR), stepsFlag(job.SynthSteps), seedFlag,
		traceFlag, logFlag,
		&ucli.PathFlag{Name: "plot", Usage: "draw the loss-space trajectories over the true front to `FILE.png`", Category: "Output"},
		jsonFlag,
	},
	Action: runSynth,
})

func init() { register(synthCommand) }

func runSynth(c *ucli.Context) (err error) {
	N := c.Int("models")
	if N < 1 {
		return fmt.Errorf("--models %d: want at least 1", N)
	}
	name := c.String("problem")
	probs := make([]*synthetic.Problem, N)
	ps := make([]finetune.Problem, N)
	for k := range probs {
		if probs[k], err = synthetic.New(name); err != nil {
			return fmt.Errorf("--problem: %w", err)
		}
		ps[k] = probs[k]
	}
	init, err := synthInit(c, probs[0].NumParams())
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Int64(seedFlag.Name)), 0x5eed))
	for k, p := range probs {
		theta := append([]float32(nil), init...)
		if N > 1 {
			for i := range theta {
				theta[i] += float32(c.Float64("spread") * rng.NormFloat64())
			}
		}
		if err := p.SetParams(theta); err != nil {
			return fmt.Errorf("--init: model %d: %w", k, err)
		}
	}
	tasks := probs[0].Tasks()

	if err := job.CheckPositive("--lr", c.Float64("lr"), "the learning rate"); err != nil {
		return err
	}
	s := &finetune.Settings{
		LR: c.Float64("lr"), Steps: c.Int("steps"), Seed: c.Int64(seedFlag.Name),
		Meta: map[string]any{"command": "synth", "problem": name, "init": init, "models": N},
	}
	if s.Method, err = methodFromFlags(c, tasks); err != nil {
		return err
	}
	expr := c.String(criterionFlag.Name)
	switch {
	case expr == "" && N > 1:
		expr = "energy"
	case expr == "" && c.String(methodFlag.Name) == "epo":
		expr = methodConfigFromFlags(c).EPOCriterion(len(tasks))
	case expr == "":
		expr = "wd:0.5,0.5"
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "energy") && N > 1 {
		s.Multi, s.PerModel, err = criterion.ParseMultiPoint(expr, tasks)
	} else {
		s.Criterion, err = criterion.Parse(expr, tasks)
	}
	if err != nil {
		return fmt.Errorf("--criterion: %w", err)
	}
	s.Meta["criterion"] = expr

	traj := &trajectories{}
	recs := []finetune.Recorder{finetune.NewProgress(c.App.ErrWriter), traj}
	traced, closeFiles, err := job.TraceRecorders("--"+traceFlag.Name, c.Path(traceFlag.Name), c.Path(logFlag.Name))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeFiles()) }()
	recs = append(recs, traced...)

	ctx, stop := signalContext(c)
	defer stop()
	var res *finetune.Result
	if N == 1 {
		res, err = finetune.Run(ctx, ps[0], nil, nil, s, finetune.Multi(recs...))
	} else {
		res, err = finetune.RunMulti(ctx, ps, nil, nil, s, finetune.Multi(recs...))
	}
	if err != nil {
		return err
	}
	if path := c.Path("plot"); path != "" {
		title := fmt.Sprintf("%s, %s, %s", name, c.String(methodFlag.Name), expr)
		if err := plotTrajectories(path, title, tasks, probs[0].Front(200), traj.pts); err != nil {
			return err
		}
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, synthJSON(res, N > 1))
	}
	return synthSummary(c.App.Writer, name, expr, res, stepLimit(c))
}

// synthInit returns --init, or the paper's default, checked against the
// problem's dimension.
func synthInit(c *ucli.Context, n int) ([]float32, error) {
	s := c.String("init")
	if s == "" {
		return synthetic.DefaultInit(n), nil
	}
	v, err := job.ParseFloats("--init", s)
	if err != nil {
		return nil, err
	}
	if len(v) != n {
		return nil, fmt.Errorf("--init %q: %d values, want %d for --problem %s", s, len(v), n, c.String("problem"))
	}
	out := make([]float32, n)
	for i, x := range v {
		out[i] = float32(x)
	}
	return out, nil
}

// synthModel is one model in synth's JSON output.
type synthModel struct {
	Losses    []jnum `json:"losses"`
	Criterion jnum   `json:"criterion"`
	G         jnum   `json:"g"`
	Theta     []jnum `json:"theta"`
	Steps     int    `json:"steps"`
}

// synthJSON is {"losses","criterion","g","theta","steps"} for one model and
// {"models":[...], "criterion": E, "steps": N} for several; a model's
// criterion is then its own value under a single-point criterion, or the
// multi-point value E.
func synthJSON(res *finetune.Result, multi bool) any {
	models := make([]synthModel, len(res.Points))
	for k, p := range res.Points {
		F := p.F
		if multi && len(res.Points) > 1 && p.F == 0 {
			F = res.F
		}
		models[k] = synthModel{Losses: jnums(p.Losses), Criterion: jnum(F), G: jnum(p.G), Theta: jnums32(p.Params), Steps: res.Steps}
	}
	if !multi {
		return models[0]
	}
	return struct {
		Models    []synthModel `json:"models"`
		Criterion jnum         `json:"criterion"`
		Steps     int          `json:"steps"`
	}{models, jnum(res.F), res.Steps}
}

func synthSummary(w io.Writer, problem, expr string, res *finetune.Result, limit string) error {
	fmt.Fprintf(w, "%s, criterion %s: %s\n", problem, expr, stoppedText(res.Status.String(), res.Steps, limit))
	for k, p := range res.Points {
		prefix := ""
		if len(res.Points) > 1 {
			prefix = fmt.Sprintf("model %d: ", k)
		}
		F := ""
		if len(res.Points) == 1 || p.F != 0 || p.InitialF != 0 {
			F = fmt.Sprintf("  F %.6g (from %.6g)", p.F, p.InitialF)
		}
		fmt.Fprintf(w, "  %slosses %s (from %s)%s  g %.3g\n",
			prefix, fmtLosses(res.Tasks, p.Losses), fmtLosses(res.Tasks, p.InitialLosses), F, p.G)
	}
	if len(res.Points) > 1 {
		fmt.Fprintf(w, "  criterion %.6g (from %.6g)\n", res.F, res.InitialF)
	}
	return nil
}

func fmtLosses(tasks []string, l []float64) string {
	parts := make([]string, len(l))
	for i, v := range l {
		parts[i] = fmt.Sprintf("%s=%.6f", tasks[i], v)
	}
	return strings.Join(parts, " ")
}
