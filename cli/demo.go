package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/models/datasets"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// demoSize is the scale of a demo run.
type demoSize struct {
	Train, Val      int     // MultiMNIST examples
	Batch           int     // examples per step
	PretrainSteps   int     // equal-weight linear scalarization, Adam
	PretrainLR      float64 // Adam's learning rate for pretraining
	TuneSteps       int     // PNG steps
	TuneLR          float64 // Adam's learning rate for PNG
	Seconds         int     // announced duration on a 2-core machine
	LeftFactor      float64 // r_left = LeftFactor · ℓ_left(pretrained)
	RightFactor     float64 // r_right = RightFactor · ℓ_right(pretrained)
	Gamma           float64 // PNG's γ
	ReportLastSteps int     // band fraction over the last steps
	ValEvery        int     // validation (losses, F, accuracies) every ValEvery PNG steps
}

// Demo sizes. The full demo uses the paper's MultiMNIST batch (256) and
// Adam. Its announced time was measured with /usr/bin/time -v on the
// project's idle 2-core machine, the built binary run from an empty
// folder: 35.8 s wall, 628 MB peak resident. It is deterministic for a
// seed (seed 1: validation F 0.01857 → 0.005839, accuracies left 95.1% →
// 95.0%, right 94.7% → 95.7%, in the band for 81 of the last 100 steps).
// γ = 0.5: g(θ)/ē measured 0.2–0.6 on batches of
// 32 to 2048 pairs (task gradients nearly orthogonal); in the last 100
// steps of a run, 0% of the steps had g ≤ 0.1·ē, 25% ≤ 0.3·ē, 52% ≤
// 0.4·ē. 40000 training pairs keep the pretrained model from overfitting
// the pairs it sees (with 20000, PNG raised the right validation loss).
// --quick (a few seconds) is for tests.
var (
	demoFull = demoSize{Train: 40000, Val: 1024, Batch: 256, PretrainSteps: 500, PretrainLR: 2e-3,
		TuneSteps: 300, TuneLR: 3e-4, Seconds: 20, LeftFactor: 0.7, RightFactor: 1.0, Gamma: 0.5, ReportLastSteps: 100, ValEvery: 10}
	demoQuick = demoSize{Train: 256, Val: 64, Batch: 16, PretrainSteps: 40, PretrainLR: 3e-3,
		TuneSteps: 30, TuneLR: 5e-4, Seconds: 5, LeftFactor: 0.7, RightFactor: 1.0, Gamma: png.DefaultGamma, ReportLastSteps: 100, ValEvery: 5}
)

var demoCommand = withConfig(&ucli.Command{
	Name:  "demo",
	Usage: "end-to-end example: two-head LeNet on MultiMNIST, pretrain, then PNG toward a trade-off",
	Description: `Needs nothing but the program: MNIST's original files are built into
it, so a copied binary runs the demo anywhere. It builds the two-head LeNet, composes MultiMNIST
(two digits on a 36x36 canvas: task left reads the top-left digit, task right
the bottom-right one), pretrains with equal task weights (Adam), then runs PNG
toward a wd criterion whose reference point r asks for a lower left loss than
the pretrained model's and keeps right where it was. It writes pretrained.onnx,
tuned.onnx, log.jsonl (the PNG run), plot.png and summary.json to --out-dir.`,
	Flags: []ucli.Flag{
		&ucli.PathFlag{Name: "out-dir", Value: "paretonav-demo", Usage: "write the results to `DIR`"},
		&ucli.BoolFlag{Name: "quick", Usage: "a much smaller run (seconds), for tests"},
		&ucli.BoolFlag{Name: "force", Usage: "replace the files of an earlier demo in --out-dir"},
		seedFlag, jsonFlag,
	},
	Action: runDemo,
})

func init() { register(demoCommand) }

// demoSummary is summary.json.
type demoSummary struct {
	Seconds       float64            `json:"seconds"`
	Train         int                `json:"train_examples"`
	Val           int                `json:"val_examples"`
	Batch         int                `json:"batch"`
	PretrainSteps int                `json:"pretrain_steps"`
	TuneSteps     int                `json:"tune_steps"`
	Criterion     string             `json:"criterion"`
	Reference     map[string]float64 `json:"reference"`
	Pretrained    job.TuneReport     `json:"pretrained"`
	Tuned         job.TuneReport     `json:"tuned"`
	FDecrease     jnum               `json:"F_decrease"` // 1 − F_tuned/F_pretrained
	// AccuracyPretrained and AccuracyTuned are the argmax accuracies
	// of both tasks on the validation pairs.
	AccuracyPretrained map[string]jnum `json:"accuracy_pretrained"`
	AccuracyTuned      map[string]jnum `json:"accuracy_tuned"`
	// InBand is the fraction of the last InBandSteps PNG steps in the
	// Pareto band (g ≤ e).
	InBand      jnum     `json:"in_band_fraction"`
	InBandSteps int      `json:"in_band_steps"`
	Gamma       float64  `json:"gamma"`
	Files       []string `json:"files"`
}

// demoFiles are the files demo writes into --out-dir.
var demoFiles = []string{"pretrained.onnx", "tuned.onnx", "log.jsonl", "plot.png", "summary.json"}

func runDemo(c *ucli.Context) error {
	size := demoFull
	if c.Bool("quick") {
		size = demoQuick
	}
	ctx, stop := signalContext(c)
	defer stop()
	var narrative io.Writer = c.App.Writer
	if c.Bool(jsonFlag.Name) {
		narrative = io.Discard
	}
	sum, err := demo(ctx, narrative, c.App.ErrWriter, c.Path("out-dir"), size, c.Int64(seedFlag.Name), c.Bool("force"))
	if err != nil {
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, sum)
	}
	return nil
}

// demo runs the whole demo and returns its summary; it prints its
// narrative to w and the progress lines to progress.
func demo(ctx context.Context, w, progress io.Writer, dir string, size demoSize, seed int64, force bool) (*demoSummary, error) {
	start := time.Now()
	// The destinations are checked before anything is printed: a second
	// demo in the same folder stops at once, saying what to do.
	if !force {
		for _, f := range demoFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return nil, fmt.Errorf("--out-dir %s holds an earlier demo's results (%s): run \"paretonav demo --force\" to replace them, or \"paretonav demo --out-dir DIR\" to write elsewhere", dir, f)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out-dir: %w", err)
	}
	dests := &job.Destinations{Force: force}
	for _, f := range demoFiles {
		dests.Output("--out-dir", filepath.Join(dir, f))
	}
	if err := dests.Check(); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "paretonav demo: this takes about %d s on 2 cores (MultiMNIST %d training / %d validation pairs, %d + %d steps of %d).\n",
		size.Seconds, size.Train, size.Val, size.PretrainSteps, size.TuneSteps, size.Batch)
	path := func(f string) string { return filepath.Join(dir, f) }

	// Data: MultiMNIST from the embedded MNIST files.
	trainSrc, err := datasets.LoadMNIST(datasets.Train)
	if err != nil {
		return nil, err
	}
	testSrc, err := datasets.LoadMNIST(datasets.Test)
	if err != nil {
		return nil, err
	}
	trainArr, err := datasets.Compose(trainSrc, trainSrc, size.Train, seed)
	if err != nil {
		return nil, err
	}
	valArr, err := datasets.Compose(testSrc, testSrc, size.Val, seed+1)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "1. MultiMNIST: %d training pairs, %d validation pairs from the MNIST test split (top-left digit: task left, bottom-right: task right).\n",
		size.Train, size.Val)

	// Model: the two-head LeNet, written as a start file.
	raw, err := models.Marshal(models.LeNet2(seed))
	if err != nil {
		return nil, err
	}
	init0, err := importer.Decode(raw)
	if err != nil {
		return nil, err
	}
	specs := []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}
	tasks := make([]backend.Task, len(specs))
	for i, s := range specs {
		if tasks[i], err = backend.ParseTask(s); err != nil {
			return nil, err
		}
	}
	open := func(m *importer.Model) (*backend.Model, *finetune.Dataset, *finetune.Dataset, error) {
		md, err := backend.Open(m, tasks, backend.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		bind := job.Binding{Model: md, Tasks: tasks}
		tr, err := finetune.Bind(trainArr, bind.Uses(), 0, "MultiMNIST train")
		if err != nil {
			return nil, nil, nil, err
		}
		va, err := finetune.Bind(valArr, bind.Uses(), 0, "MultiMNIST validation")
		if err != nil {
			return nil, nil, nil, err
		}
		return md, tr, va, nil
	}

	// 2. Pretraining: equal-weight linear scalarization with Adam.
	md, tr, va, err := open(init0)
	if err != nil {
		return nil, err
	}
	sumCrit, err := criterion.Parse("left+right", md.Tasks())
	if err != nil {
		return nil, err
	}
	pre := &job.Tune{ModelPath: "lenet2", Model: init0, Net: md, Tasks: tasks, Train: tr, Report: va, ReportName: "validation",
		Criterion: "left+right", Method: "linear", Batch: size.Batch, Out: path("pretrained.onnx"), Force: true, Progress: progress,
		Settings: &finetune.Settings{Method: png.Linear{}, Criterion: sumCrit, Optimizer: "adam", LR: size.PretrainLR,
			Steps: size.PretrainSteps, BatchSize: size.Batch, Seed: seed, Meta: map[string]any{"command": "demo pretrain"}}}
	fmt.Fprintf(w, "2. Pretraining the two-head LeNet (%d parameters) with equal task weights, Adam lr %g, %d steps of %d...\n",
		md.NumParams(), size.PretrainLR, size.PretrainSteps, size.Batch)
	preRes, err := pre.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("demo: pretraining: %w", err)
	}
	lPre := preRes.AfterLosses
	fmt.Fprintf(w, "   pretrained: validation losses left %.4f, right %.4f (from %.4f, %.4f); g = %.3g\n",
		lPre[0], lPre[1], preRes.BeforeLosses[0], preRes.BeforeLosses[1], float64(preRes.After.G))

	// 3. PNG toward a trade-off favouring left.
	r := []float64{size.LeftFactor * lPre[0], size.RightFactor * lPre[1]}
	expr := fmt.Sprintf("wd:%.4g,%.4g", r[0], r[1])
	preModel, err := importer.Load(path("pretrained.onnx"))
	if err != nil {
		return nil, err
	}
	md2, tr2, va2, err := open(preModel)
	if err != nil {
		return nil, err
	}
	crit, err := criterion.Parse(expr, md2.Tasks())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "3. PNG toward criterion %s = Σ(ℓ_i − r_i)²/r_i: r asks for a left loss %.0f%% below the pretrained one\n"+
		"   while right may stay where it is (r_right = %.0f%% of its pretrained loss): a trade-off that favours left.\n"+
		"   PNG descends F only while g(θ) ≤ e = γ·ē (γ = %g), the Pareto band; outside, it first lowers every loss.\n",
		expr, 100*(1-size.LeftFactor), 100*size.RightFactor, size.Gamma)
	if size.Gamma != png.DefaultGamma {
		fmt.Fprintf(w, "   (γ = %g, not the paper's %g: the two tasks' gradients are nearly orthogonal on this model (cosine about 0\n"+
			"   on batches of 32 to 2048 pairs), so g(θ) stays at 0.2–0.6 of ē and with γ = %g the control would never switch off.)\n",
			size.Gamma, png.DefaultGamma, png.DefaultGamma)
	}
	accPre, err := demoAccuracy(md2, tasks, va2, size.Batch)
	if err != nil {
		return nil, err
	}
	trace := &demoTrace{md: md2, tasks: tasks, val: va2, batch: size.Batch, crit: crit}
	logRecs, closeLog, err := job.TraceRecorders("--csv", "", path("log.jsonl"))
	if err != nil {
		return nil, err
	}
	tune := &job.Tune{ModelPath: path("pretrained.onnx"), Model: preModel, Net: md2, Tasks: tasks, Train: tr2, Val: va2, Report: va2,
		ReportName: "validation", Criterion: expr, Method: "png", Batch: size.Batch, Out: path("tuned.onnx"), Force: true,
		Progress: progress, Extra: append(logRecs, trace),
		Settings: &finetune.Settings{Method: png.PNG{Settings: png.Settings{Gamma: size.Gamma}}, Criterion: crit, Optimizer: "adam",
			LR: size.TuneLR, Steps: size.TuneSteps, BatchSize: size.Batch, Seed: seed + 7, ValEvery: size.ValEvery,
			Meta: map[string]any{"command": "demo tune", "criterion": expr}}}
	res, err := tune.Run(ctx)
	if cerr := closeLog(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("demo: PNG: %w", err)
	}
	accPost, err := demoAccuracy(md2, tasks, va2, size.Batch)
	if err != nil {
		return nil, err
	}
	trace.bracket(res.BeforeLosses, accPre, float64(size.TuneSteps), res.AfterLosses, accPost)
	if err := plotDemo(path("plot.png"), "demo: two-head LeNet on MultiMNIST, PNG toward "+expr, md2.Tasks(), r, size.Gamma, trace); err != nil {
		return nil, err
	}
	sum := &demoSummary{
		Train: size.Train, Val: size.Val, Batch: size.Batch, PretrainSteps: size.PretrainSteps, TuneSteps: size.TuneSteps,
		Criterion: expr, Reference: map[string]float64{"left": r[0], "right": r[1]},
		Pretrained: res.Before, Tuned: res.After, Gamma: size.Gamma, Files: demoFiles,
		AccuracyPretrained: map[string]jnum{"left": jnum(accPre[0]), "right": jnum(accPre[1])},
		AccuracyTuned:      map[string]jnum{"left": jnum(accPost[0]), "right": jnum(accPost[1])},
	}
	sum.InBand, sum.InBandSteps = job.InBand(trace.G, trace.E, size.ReportLastSteps)
	if res.Before.F > 0 {
		sum.FDecrease = 1 - res.After.F/res.Before.F
	}
	sum.Seconds = time.Since(start).Seconds()
	if err := writeJSONFile(path("summary.json"), sum); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "4. Result on the validation pairs:\n")
	fmt.Fprintf(w, "     %-10s %10s %10s %10s\n", "", "pretrained", "tuned", "r")
	for i, n := range []string{"left", "right"} {
		fmt.Fprintf(w, "     %-10s %10.4f %10.4f %10.4f\n", n, res.BeforeLosses[i], res.AfterLosses[i], r[i])
	}
	fmt.Fprintf(w, "     %-10s %10.4g %10.4g   (%.0f%% lower)\n", "F", float64(res.Before.F), float64(res.After.F), 100*float64(sum.FDecrease))
	for i, n := range []string{"left", "right"} {
		fmt.Fprintf(w, "     %-10s %9.1f%% %9.1f%%\n", "acc "+n, 100*accPre[i], 100*accPost[i])
	}
	fmt.Fprintf(w, "     %-10s %10.3g %10.3g\n", "g(θ)", float64(res.Before.G), float64(res.After.G))
	fmt.Fprintf(w, "   In the Pareto band (g ≤ e) for %.0f%% of the last %d PNG steps.\n", 100*float64(sum.InBand), sum.InBandSteps)
	fmt.Fprintf(w, "Wrote %s (pretrained.onnx, tuned.onnx, log.jsonl, plot.png, summary.json) in %.0f s.\n", dir, sum.Seconds)
	fmt.Fprintf(w, "%s", demoNext(dir))
	return sum, nil
}

// writeJSONFile writes v as indented JSON to path (a temporary file
// renamed over it).
func writeJSONFile(path string, v any) error {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		return err
	}
	return job.WriteFile(path, b.Bytes())
}

// demoNext is the demo's last word: what to look at, and how to tune a
// model of one's own with the same commands.
func demoNext(dir string) string {
	return fmt.Sprintf(`Next:
   look at %[1]s/plot.png; paretonav inspect %[1]s/tuned.onnx shows what the tuned model holds;
   tune a model of your own (the README's "Tune your own model"), for example this one again:
     paretonav tune %[1]s/pretrained.onnx --data train.npz \
       --task left:nll:logp_left:left --task right:nll:logp_right:right --criterion 'wd:0.1,0.17'
   where train.npz comes from: paretonav data multimnist --out train.npz
`, dir)
}
