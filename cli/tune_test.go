package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/models"
)

// lenetTasks are the two MultiMNIST tasks of models.LeNet2.
var lenetTasks = []string{"--task", "left:nll:logp_left:left", "--task", "right:nll:logp_right:right"}

// tinyLeNet writes a LeNet2 model and n random examples (arrays x, left,
// right) into dir and returns their paths.
func tinyLeNet(t testing.TB, dir string, n int) (model, data string) {
	t.Helper()
	model, data = filepath.Join(dir, "lenet2.onnx"), filepath.Join(dir, "data.npz")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(data, tinyArrays(n)); err != nil {
		t.Fatal(err)
	}
	return model, data
}

func tinyArrays(n int) map[string]*importer.Tensor {
	rng := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, n*36*36)
	for i := range x {
		x[i] = rng.Float32()
	}
	l, r := make([]int64, n), make([]int64, n)
	for i := range l {
		l[i], r[i] = int64(rng.IntN(10)), int64(rng.IntN(10))
	}
	return map[string]*importer.Tensor{
		"x":     importer.NewFloat32("x", []int{n, 1, 36, 36}, x),
		"left":  importer.NewInt64("left", []int{n}, l),
		"right": importer.NewInt64("right", []int{n}, r),
	}
}

func TestTuneDataMismatch(t *testing.T) {
	dir := t.TempDir()
	model, _ := tinyLeNet(t, dir, 4)
	tests := []struct {
		name   string
		edit   func(a map[string]*importer.Tensor)
		extra  []string
		needle []string // all must appear in the error
	}{
		{"missing input array", func(a map[string]*importer.Tensor) { delete(a, "x") }, nil,
			[]string{`no array "x" for model input "x"`}},
		{"missing target array", func(a map[string]*importer.Tensor) { delete(a, "right") }, nil,
			[]string{`no array "right" for target of task "right"`}},
		{"mapped array missing", nil, []string{"--map", "x=images"},
			[]string{`no array "images" for model input "x"`}},
		{"map to unknown input", nil, []string{"--map", "y=x"},
			[]string{`--map y=x`, `no input "y"`}},
		{"wrong shape", func(a map[string]*importer.Tensor) {
			a["x"] = importer.NewFloat32("x", []int{4, 1, 28, 28}, make([]float32, 4*28*28))
		}, nil, []string{`array "x" for model input "x" has shape [4 1 28 28]`, "[N,1,36,36]"}},
		{"wrong dtype", func(a map[string]*importer.Tensor) {
			a["x"] = importer.NewInt64("x", []int{4, 1, 36, 36}, make([]int64, 4*36*36))
		}, nil, []string{`array "x" for model input "x" has element type int64`, "astype(np.float32)"}},
		{"label out of range", func(a map[string]*importer.Tensor) {
			a["left"].I64[2] = 10
		}, nil, []string{`task "left"`, `target array "left"`, "element 2 is 10", "[0, 10)"}},
		{"target of wrong shape", func(a map[string]*importer.Tensor) {
			a["right"] = importer.NewInt64("right", []int{4, 2}, make([]int64, 8))
		}, nil, []string{`task "right"`, `target array "right" has shape [4 2]`}},
		{"example counts differ", func(a map[string]*importer.Tensor) {
			a["left"] = importer.NewInt64("left", []int{3}, []int64{1, 2, 3})
		}, nil, []string{`array "left" for target of task "left" has 3 examples`, `array "x" for model input "x" has 4`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arrays := tinyArrays(4)
			if tc.edit != nil {
				tc.edit(arrays)
			}
			data := filepath.Join(t.TempDir(), "d.npz")
			if err := npz.Write(data, arrays); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.onnx")
			args := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--out", out}, lenetTasks...)
			printed, err := runCLI(t, append(args, tc.extra...)...)
			if err == nil {
				t.Fatalf("tune accepted bad data:\n%s", printed)
			}
			for _, n := range tc.needle {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("error lacks %q:\n%v", n, err)
				}
			}
			if strings.Contains(printed, "step 1/") {
				t.Errorf("training started before the data check:\n%s", printed)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written despite the error", out)
			}
			// eval checks the same way.
			evalArgs := append([]string{"eval", model, "--data", data}, lenetTasks...)
			if _, err := runCLI(t, append(evalArgs, tc.extra...)...); err == nil || !strings.Contains(err.Error(), tc.needle[0]) {
				t.Errorf("eval: err = %v, want one containing %q", err, tc.needle[0])
			}
		})
	}
}

func TestTuneRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	orig, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing.onnx")
	if err := os.WriteFile(existing, orig, 0o644); err != nil { // a model: --force may replace it
		t.Fatal(err)
	}
	base := append([]string{"tune", model, "--data", data, "--criterion", "left+right", "--steps", "1", "--batch", "4"}, lenetTasks...)
	tests := []struct {
		name   string
		args   []string
		needle string
	}{
		{"input as output", []string{"--out", model}, "input model"},
		{"input as output with --force", []string{"--out", model, "--force"}, "input model"},
		{"input through another spelling", []string{"--out", filepath.Join(dir, ".", "lenet2.onnx"), "--force"}, "input model"},
		{"existing output", []string{"--out", existing}, "file exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, append(base, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.needle) {
				t.Fatalf("err = %v, want one containing %q\n%s", err, tc.needle, out)
			}
		})
	}
	if b, _ := os.ReadFile(model); !bytes.Equal(b, orig) {
		t.Error("the input model changed")
	}
	if b, _ := os.ReadFile(existing); !bytes.Equal(b, orig) {
		t.Error("the existing output changed without --force")
	}
	// With --force the existing output is replaced by a model.
	if out, err := runCLI(t, append(base, "--out", existing, "--force")...); err != nil {
		t.Fatalf("--force: %v\n%s", err, out)
	}
	if _, err := importer.Load(existing); err != nil {
		t.Errorf("--force output: %v", err)
	}
}

// cancelAfter is a Recorder that cancels a context after step n.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Init(*finetune.Config) error { return nil }
func (c *cancelAfter) Record(st *finetune.Step) error {
	if st.Step == c.n {
		c.cancel()
	}
	return nil
}
func (c *cancelAfter) Done(*finetune.Result) error { return nil }

func TestTuneInterruptedThenResumed(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 8)
	out, ckpt := filepath.Join(dir, "tuned.onnx"), filepath.Join(dir, "run.ckpt")
	args := append([]string{"paretonav", "tune", model, "--data", data, "--criterion", "wd:2,2", "--steps", "6", "--batch", "4",
		"--out", out, "--checkpoint", ckpt}, lenetTasks...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuneTestRecorder = &cancelAfter{n: 2, cancel: cancel}
	defer func() { tuneTestRecorder = nil }()
	var buf bytes.Buffer
	app := NewApp()
	app.Writer, app.ErrWriter = &buf, &buf
	err := app.RunContext(ctx, args)
	var ie *finetune.InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an InterruptedError\n%s", err, buf.String())
	}
	if ExitCode(err) == 0 || ie.Step != 2 || ie.Checkpoint != ckpt {
		t.Errorf("exit code %d, step %d, checkpoint %q; want non-zero, 2, %q", ExitCode(err), ie.Step, ie.Checkpoint, ckpt)
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Errorf("no checkpoint: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written by an interrupted run", out)
	}
	if !strings.Contains(buf.String(), "--resume "+ckpt) {
		t.Errorf("no resume hint:\n%s", buf.String())
	}

	tuneTestRecorder = nil
	printed, err := runCLI(t, append(args[1:], "--resume", ckpt, "--json")...)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, printed)
	}
	var res struct {
		Steps  int    `json:"steps"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal([]byte(printed[strings.Index(printed, "{"):]), &res); err != nil {
		t.Fatalf("resume --json: %v\n%s", err, printed)
	}
	if res.Steps != 6 || res.Output != out {
		t.Errorf("resumed run: %+v, want 6 steps and output %s", res, out)
	}
	if _, err := importer.Load(out); err != nil {
		t.Errorf("resumed output: %v", err)
	}
}

func TestTuneNonFinite(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	tests := []struct {
		name      string
		args      []string
		nonFinite bool // the error is a finetune.ErrNonFinite
		diverged  bool // the error is a finetune.ErrDiverged
	}{
		// log of a negative number: the criterion is NaN at the first
		// step, with no earlier parameters to return to.
		{"criterion", []string{"--criterion", "log(left-100)"}, true, false},
		// A learning rate of 1000 sends the losses from 2.3 to 10⁵ and
		// more, finite: the model diverged, and rolling back with a
		// halved rate three times does not save it.
		{"diverged", []string{"--criterion", "left+right", "--optimizer", "sgd", "--lr", "1000", "--momentum", "0"}, false, true},
		// A learning rate of 1e30 sends the weights far out; halving it
		// on each rollback cannot help. The backend reports the NaN loss
		// as an error of its own (not a NaN the loop could roll back),
		// so only the failure and the absent output are checked.
		{"learning rate", []string{"--criterion", "left+right", "--optimizer", "sgd", "--lr", "1e30"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".onnx")
			args := append([]string{"tune", model, "--data", data, "--steps", "5", "--batch", "4", "--out", out}, lenetTasks...)
			printed, err := runCLI(t, append(args, tc.args...)...)
			if err == nil {
				t.Fatalf("tune succeeded:\n%s", printed)
			}
			if tc.nonFinite {
				if !errors.Is(err, finetune.ErrNonFinite) {
					t.Errorf("err = %v, want ErrNonFinite", err)
				}
				if !strings.Contains(err.Error(), "no model written") {
					t.Errorf("error does not say that nothing was written: %v", err)
				}
			}
			if tc.diverged && (!errors.Is(err, finetune.ErrDiverged) || !strings.Contains(err.Error(), "model 0 diverged: loss")) {
				t.Errorf("err = %v, want ErrDiverged naming the model and its loss", err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written by a failed run", out)
			}
		})
	}
}

// runTuneJSON runs paretonav with args, a tune command with --json, and
// decodes the JSON object it prints (after any other output).
func runTuneJSON(t *testing.T, args ...string) tuneOutcome {
	t.Helper()
	printed, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	var res tuneOutcome
	if err := json.Unmarshal([]byte(printed[strings.Index(printed, "{"):]), &res); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	return res
}

// TestTuneTorchFixture tunes a PyTorch-exported model, loads the result in
// ONNX Runtime, and checks that tune's validation losses, eval's losses on
// the saved model and the losses recomputed from ONNX Runtime's outputs
// agree.
func TestTuneTorchFixture(t *testing.T) {
	ortcheck.Require(t)
	dir := t.TempDir()
	fx, data, taskArgs := torchFixture(t, "lenet2_op13", dir, "val.npz", "images")
	out := filepath.Join(dir, "tuned.onnx")
	args := append([]string{"tune", fx.ModelPath, "--data", data, "--val", data, "--map", "x=images", "--criterion", "left+2*right",
		"--steps", "8", "--batch", "2", "--lr", "1e-3", "--out", out, "--json"}, taskArgs...)
	tuned := runTuneJSON(t, args...)
	if tuned.MeasuredOn != "validation" || tuned.Steps != 8 {
		t.Errorf("measured on %q after %d steps, want validation after 8", tuned.MeasuredOn, tuned.Steps)
	}
	if !(tuned.After.F < tuned.Before.F) {
		t.Errorf("F did not decrease: %v → %v", tuned.Before.F, tuned.After.F)
	}

	evalArgs := append([]string{"eval", out, "--data", data, "--map", "x=images", "--json"}, taskArgs...)
	printed, err := runCLI(t, evalArgs...)
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, printed)
	}
	var ev evalJSON
	if err := json.Unmarshal([]byte(printed), &ev); err != nil {
		t.Fatalf("%v\n%s", err, printed)
	}
	outs, err := ortcheck.Run(out, map[string]*importer.Tensor{fx.InputName: fx.Input})
	if err != nil {
		t.Fatalf("ONNX Runtime on %s: %v", out, err)
	}
	const tol = 1e-5
	for _, task := range []struct{ name, output string }{{"left", "logp_left"}, {"right", "logp_right"}} {
		e, tu := float64(ev.Tasks[task.name]), float64(tuned.After.Losses[task.name])
		if math.Abs(e-tu) > tol {
			t.Errorf("%s: eval %v, tune reported %v", task.name, e, tu)
		}
		// nll from ONNX Runtime's log-probabilities.
		logp, labels := outs[task.output].Float64s(), fx.Targets[task.name].Int64s()
		var nll float64
		for i, y := range labels {
			nll -= logp[i*10+int(y)] / float64(len(labels))
		}
		if math.Abs(nll-e) > 1e-4 {
			t.Errorf("%s: ONNX Runtime's outputs give %v, eval %v", task.name, nll, e)
		}
	}
	m, err := importer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var meta string
	for _, kv := range m.Proto.GetMetadataProps() {
		if kv.GetKey() == "paretonav" {
			meta = kv.GetValue()
		}
	}
	for _, want := range []string{`"criterion":"left+2*right"`, `"steps":8`, `"version":"` + Version, "left:nll:logp_left:left"} {
		if !strings.Contains(meta, want) {
			t.Errorf("metadata lacks %s: %s", want, meta)
		}
	}
}

// TestTuneConfig reads tasks, criterion and steps from --config, given
// after the model argument; the command line's --steps wins over the file.
func TestTuneConfig(t *testing.T) {
	dir := t.TempDir()
	model, data := tinyLeNet(t, dir, 4)
	cfg := filepath.Join(dir, "tune.yaml")
	yaml := "task: [\"left:nll:logp_left:left\", \"right:nll:logp_right:right\"]\ncriterion: wd:2,2\nsteps: 50\nbatch: 2\nmethod: mgd\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tuned.onnx")
	res := runTuneJSON(t, "tune", model, "--config", cfg, "--data", data, "--steps", "2", "--out", out, "--json")
	if res.Steps != 2 || res.Criterion != "wd:2,2" || res.Method != "mgd" || strings.Join(res.Tasks, ",") != "left,right" {
		t.Errorf("got %d steps, criterion %q, method %q, tasks %v; want 2, wd:2,2, mgd, left,right", res.Steps, res.Criterion, res.Method, res.Tasks)
	}
}
