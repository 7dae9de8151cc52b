package interop_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// Acceptance criteria. Everything read back from a saved model
// (weights, our forward outputs) must be bit-identical to the model in
// memory; ONNX Runtime's outputs must agree with ours element by element
// within ortAbs + ortRel·|ours|, with no further slack.
//
// The exact value is known too (our backend in float64 with the same
// weights): our float32 round-off δ = |ours − exact| must stay below
// maxRoundoff, and the log reports the worst δ beside the worst difference
// to ONNX Runtime. Test models are well conditioned (trained-like biases,
// calibrated BatchNorm statistics): a freshly initialised MTAN divides by
// normal vectors of norm ~1e-10 at some pixels, where every float32
// implementation, ONNX Runtime included, is 1e-4 from the exact answer.
const (
	ortAbs      = 1e-4
	ortRel      = 1e-4
	maxRoundoff = 1e-3
)

// tuneSteps is the number of real PNG steps every model takes before it is
// saved; tuneLR (unless the case sets its own) is large enough that every
// step moves the weights.
const (
	tuneSteps = 2
	tuneLR    = 1e-2
)

// producerKey is the metadata_props key the tests write, as the CLI does.
const producerKey = "paretonav"

// modelCase is one model to tune, save and check.
type modelCase struct {
	name string
	// write puts the input model (and its external data, if any) into dir
	// and returns the model's path.
	write     func(t *testing.T, dir string) string
	tasks     []string
	criterion string
	// batch returns the model inputs and task targets, by name.
	batch  func(t *testing.T) map[string]*importer.Tensor
	freeze []string // backend.Options.Freeze globs; each must match a float initializer
	// external: the input keeps its float weights in external data.
	external bool
	// batchNorm: the model has BatchNormalization running statistics.
	batchNorm bool
	// lr is the learning rate of the steps (0: tuneLR).
	lr float64
}

// lenetTasks are the two-headed LeNet's tasks (models.LeNet2).
var lenetTasks = []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}

// mtanTasks are MTAN's three tasks (models.MTAN).
var mtanTasks = []string{"seg:nll:seg_logp:seg", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"}

// mtanConfig is a small MTAN: all its ops and layers, little compute.
var mtanConfig = models.MTANConfig{Width: 4, InputHeight: 32, InputWidth: 32, Classes: 4, Seed: 3}

// cases returns the models: our own LeNet2 and a small MTAN, LeNet2 with
// its weights in external data, the onnx-written external-data MLP of
// importer's testdata, and every PyTorch fixture.
func cases(t *testing.T) []modelCase {
	t.Helper()
	cs := []modelCase{
		{
			name:      "lenet2",
			write:     writeProto(func() *onnxpb.ModelProto { return models.LeNet2(7) }),
			tasks:     lenetTasks,
			criterion: "left*right",
			batch:     lenetBatch(4),
			freeze:    []string{"conv1.*"},
		},
		{
			name: "lenet2_external",
			write: func(t *testing.T, dir string) string {
				return writeExternal(t, models.LeNet2(11), dir, "lenet2_ext.onnx", "weights.bin")
			},
			tasks:     lenetTasks,
			criterion: "wd:1,1",
			batch:     lenetBatch(3),
			freeze:    []string{"head_right.*"},
			external:  true,
		},
		{
			name: "mtan_w4",
			write: func(t *testing.T, dir string) string {
				mp := models.MTAN(mtanConfig)
				randomBiases(t, mp, 5)
				calibrateBN(t, mp, mtanTasks, mtanBatch(16)(t))
				return writeProto(func() *onnxpb.ModelProto { return mp })(t, dir)
			},
			tasks:     mtanTasks,
			criterion: "seg+depth+normal",
			batch:     mtanBatch(2),
			freeze:    []string{"encoder_block.0.*"},
			batchNorm: true,
			lr:        1e-3, // the paper's; 1e-2 sends the depth head to 1e4 in two steps
		},
		{
			name:      "mlp_ext",
			write:     copyFiles("../../../importer/testdata", "mlp_ext.onnx", "mlp_ext.onnx.data"),
			tasks:     []string{"reg:mse:y:t"},
			criterion: "reg",
			batch:     mlpBatch(5),
			freeze:    []string{"b1"},
			external:  true,
		},
	}
	names, err := ortcheck.FixtureNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		f, err := ortcheck.LoadFixture(name)
		if err != nil {
			t.Fatal(err)
		}
		var taskNames []string
		for _, s := range f.Tasks {
			task, err := backend.ParseTask(s)
			if err != nil {
				t.Fatalf("fixture %s: %v", name, err)
			}
			taskNames = append(taskNames, task.Name)
		}
		cs = append(cs, modelCase{
			name:      "torch/" + name,
			write:     copyFiles(filepath.Dir(f.ModelPath), filepath.Base(f.ModelPath)),
			tasks:     f.Tasks,
			criterion: strings.Join(taskNames, "+"),
			batch: func(*testing.T) map[string]*importer.Tensor {
				b := map[string]*importer.Tensor{f.InputName: f.Input}
				for k, v := range f.Targets {
					b[k] = v
				}
				return b
			},
			freeze:    []string{f.Trainable[0]},
			batchNorm: len(f.Buffers) > 0,
		})
	}
	extra, err := filepath.Glob(filepath.Join(extraDir, "*.json"))
	if err != nil || len(extra) == 0 {
		t.Fatalf("no fixtures in %s (%v)", extraDir, err)
	}
	for _, p := range extra {
		cs = append(cs, extraCase(t, extraDir, "torch_extra/", strings.TrimSuffix(filepath.Base(p), ".json")))
	}
	torch2, err := filepath.Glob(filepath.Join(torch2Dir, "*.json"))
	if err != nil || len(torch2) == 0 {
		t.Fatalf("no fixtures in %s (%v)", torch2Dir, err)
	}
	for _, p := range torch2 {
		cs = append(cs, extraCase(t, torch2Dir, "torch2/", strings.TrimSuffix(filepath.Base(p), ".json")))
	}
	return cs
}

// extraDir holds backend's further PyTorch exports (make_extra.py), in the
// layout of ortcheck's fixtures but outside ortcheck.FixtureDir.
const extraDir = "../../../backend/testdata/torch_extra"

// torch2Dir holds backend's PyTorch 2.x exports (make_torch2_fixtures.py:
// both exporters, default opset and 21), in the same layout.
const torch2Dir = "../../../backend/testdata/torch2"

// extraCase reads the fixture name of dir (a folder in the layout of
// ortcheck's fixtures) as a case named prefix+name.
func extraCase(t *testing.T, dir, prefix, name string) modelCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Model     string   `json:"model"`
		Data      string   `json:"data"`
		Tasks     []string `json:"tasks"`
		Trainable []string `json:"trainable"`
		Buffers   []string `json:"buffers"`
		Input     struct{ Name string }
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	arrays, err := npz.Read(filepath.Join(dir, meta.Data))
	if err != nil {
		t.Fatal(err)
	}
	batch := map[string]*importer.Tensor{}
	for key, v := range arrays {
		switch kind, rest, _ := strings.Cut(key, "/"); {
		case kind == "input" && rest == meta.Input.Name, kind == "target":
			batch[rest] = v
		}
	}
	if batch[meta.Input.Name] == nil || len(meta.Trainable) == 0 {
		t.Fatalf("%s: no input %q or no trainable initializer", name, meta.Input.Name)
	}
	var taskNames []string
	for _, s := range meta.Tasks {
		task, err := backend.ParseTask(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		taskNames = append(taskNames, task.Name)
	}
	return modelCase{
		name:      prefix + name,
		write:     copyFiles(dir, meta.Model),
		tasks:     meta.Tasks,
		criterion: strings.Join(taskNames, "+"),
		batch:     func(*testing.T) map[string]*importer.Tensor { return batch },
		freeze:    []string{meta.Trainable[0]},
		batchNorm: len(meta.Buffers) > 0,
	}
}

// TestTunedModelInterop tunes every model with real PNG steps, saves it
// before and after the steps, and checks each saved file:
//
//   - the ModelProto equals the input's except for initializer values and
//     the producer's metadata_props entry, and every initializer keeps its
//     storage form (external data stays external, at aligned offsets in
//     the data file beside the output, unless InlineData);
//   - the trained weights read back bit for bit; every other initializer
//     (frozen weights, BatchNorm running statistics, shapes) is unchanged;
//   - backend opens it with the same parameters and computes bit-identical
//     outputs;
//   - ONNX Runtime loads it (from its folder, for external data) and its
//     outputs match ours within ortAbs + ortRel·|ours|;
//
// and that the input files are never modified.
func TestTunedModelInterop(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) { checkCase(t, c) })
	}
}

// saved is one file written by Save and what it must hold.
type saved struct {
	label   string
	path    string
	opt     importer.SaveOptions
	weights map[string]*importer.Tensor
	outputs map[string]*importer.Tensor // our outputs with those weights
	exact   map[string]*importer.Tensor // the same in float64
}

func checkCase(t *testing.T, c modelCase) {
	dir := t.TempDir()
	in := c.write(t, dir)
	inFiles := snapshot(t, dir)

	m0, err := importer.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	if m0.HasExternalData() != c.external {
		t.Fatalf("input has external data: %v, the case says %v", m0.HasExternalData(), c.external)
	}
	var tasks []backend.Task
	for _, s := range c.tasks {
		task, err := backend.ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	opt := backend.Options{Freeze: c.freeze}
	md, err := backend.Open(m0, tasks, opt)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := m0.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	frozen := frozenNames(t, m0, md, c.freeze)
	stats := runningStats(m0)
	if c.batchNorm != (len(stats) > 0) {
		t.Fatalf("BatchNormalization running statistics %v; the case expects some: %v", stats, c.batchNorm)
	}
	batch := c.batch(t)
	if err := md.CheckBatch(batch); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]*importer.Tensor{}
	for _, mi := range md.Inputs() {
		inputs[mi.Name] = batch[mi.Name]
	}

	beforeW := md.Weights()
	beforeOut, err := md.Outputs(batch)
	if err != nil {
		t.Fatal(err)
	}
	beforeParams := params(md)
	md64, err := backend.Open(m0, tasks, backend.Options{Freeze: c.freeze, Float64: true})
	if err != nil {
		t.Fatal(err)
	}
	exact := func(theta []float32) map[string]*importer.Tensor {
		t.Helper()
		if err := md64.SetParams(theta); err != nil {
			t.Fatal(err)
		}
		outs, err := md64.Outputs(batch)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}

	record, err := json.Marshal(map[string]any{"tool": "paretonav interop test", "model": c.name, "criterion": c.criterion, "steps": tuneSteps})
	if err != nil {
		t.Fatal(err)
	}
	producer := map[string]string{producerKey: string(record)}
	var files []saved
	save := func(label, name string, opt importer.SaveOptions, w, outs, ex map[string]*importer.Tensor) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := importer.Save(p, m0, w, opt); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		files = append(files, saved{label: label, path: p, opt: opt, weights: w, outputs: outs, exact: ex})
	}
	save("before", "before.onnx", importer.SaveOptions{Producer: producer}, beforeW, beforeOut, exact(beforeParams))

	// Real steps: PNG on the criterion, plain SGD.
	train, err := finetune.NewDataset(batch)
	if err != nil {
		t.Fatal(err)
	}
	crit, err := criterion.Parse(c.criterion, md.Tasks())
	if err != nil {
		t.Fatal(err)
	}
	s := &finetune.Settings{Method: png.PNG{}, Criterion: crit, Steps: tuneSteps, BatchSize: train.Len(), LR: tuneLR, Seed: 1}
	if c.lr != 0 {
		s.LR = c.lr
	}
	res, err := finetune.Run(context.Background(), md, train, nil, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != finetune.StepLimit || res.Steps != tuneSteps {
		t.Fatalf("run ended with %v after %d steps, want StepLimit after %d", res.Status, res.Steps, tuneSteps)
	}
	afterParams := params(md)
	if !sameFloat32s(afterParams, res.Points[0].Params) {
		t.Fatal("the model's parameters are not the run's final parameters")
	}
	changed := 0
	for i := range afterParams {
		if math.Float32bits(afterParams[i]) != math.Float32bits(beforeParams[i]) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("%d PNG steps left all %d parameters unchanged", tuneSteps, len(afterParams))
	}
	afterW := md.Weights()
	afterOut, err := md.Outputs(batch)
	if err != nil {
		t.Fatal(err)
	}
	afterExact := exact(afterParams)
	save("tuned", "tuned.onnx", importer.SaveOptions{Producer: producer}, afterW, afterOut, afterExact)
	if c.external {
		save("tuned, inline data", "tuned_inline.onnx", importer.SaveOptions{Producer: producer, InlineData: true}, afterW, afterOut, afterExact)
	}

	for _, f := range files {
		t.Run(f.label, func(t *testing.T) {
			m1 := checkFile(t, m0, f, producer[producerKey], orig, frozen, stats)
			md1, err := backend.Open(m1, tasks, opt)
			if err != nil {
				t.Fatal(err)
			}
			want := beforeParams
			if f.label != "before" {
				want = afterParams
			}
			if !sameFloat32s(params(md1), want) {
				t.Error("parameters of the reopened model differ from those saved")
			}
			outs, err := md1.Outputs(batch)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range f.outputs {
				if !sameBits(outs[name], w) {
					t.Errorf("output %q of the reopened model is not bit-identical to the in-memory model's", name)
				}
			}
		})
	}
	if t.Failed() {
		return
	}

	t.Run("ort", func(t *testing.T) {
		ortcheck.Require(t)
		ortIn, err := ortcheck.Run(in, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			got, err := ortcheck.Run(f.path, inputs)
			if err != nil {
				t.Fatalf("%s: %v", f.label, err)
			}
			var sum orcDiff
			for name, ours := range f.outputs {
				sum.add(compareORT(t, f.label+": output "+name, got[name], ours, f.exact[name]))
			}
			t.Logf("%s: worst |ORT − ours| = %.3g (%.3g of ortAbs+ortRel·|ours|); worst |ours − exact| = %.3g over %d values",
				f.label, sum.abs, sum.ratio, sum.roundoff, sum.n)
			if f.label == "before" {
				// Unchanged weights: ORT gives the input's outputs bit for bit.
				for name, w := range ortIn {
					if !sameBits(got[name], w) {
						t.Errorf("before: ORT output %q differs from ORT's output of the input model", name)
					}
				}
			}
		}
	})

	if got := snapshot(t, dir); !inputsKept(inFiles, got) {
		t.Error("an input file was modified")
	}
}

// checkFile loads a saved model and checks its proto, storage forms and
// initializer values against the input m0 and the weights it was saved
// with.
func checkFile(t *testing.T, m0 *importer.Model, f saved, producer string, orig map[string]*importer.Tensor, frozen, stats []string) *importer.Model {
	t.Helper()
	m1, err := importer.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	checkProto(t, m0.Proto, m1.Proto, producer, importer.DataFileName(f.path), f.opt.InlineData)
	got, err := m1.Initializers()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(orig) {
		t.Errorf("%d initializers, the input has %d", len(got), len(orig))
	}
	for name, o := range orig {
		want, trained := f.weights[name]
		if !trained {
			want = o
		}
		if !sameBits(got[name], want) {
			if trained {
				t.Errorf("trained weight %q is not bit-identical to the in-memory model's", name)
			} else {
				t.Errorf("untrained initializer %q changed", name)
			}
		}
	}
	for _, group := range []struct {
		what  string
		names []string
	}{{"frozen weight", frozen}, {"BatchNorm running statistic", stats}} {
		for _, name := range group.names {
			if _, ok := f.weights[name]; ok {
				t.Errorf("%s %q is among the trained weights", group.what, name)
			}
			if !sameBits(got[name], orig[name]) {
				t.Errorf("%s %q changed", group.what, name)
			}
		}
	}
	return m1
}

// checkProto checks that saved equals orig once initializer values and
// the producer entry are blanked: same graph, nodes, names, types, shapes,
// opsets, doc strings, other metadata and unknown fields; each initializer
// keeps its storage form.
func checkProto(t *testing.T, orig, saved *onnxpb.ModelProto, producer, dataFile string, inline bool) {
	t.Helper()
	for _, p := range protoProblems(orig, saved, producer, dataFile, inline) {
		t.Error(p)
	}
}

// protoProblems lists how saved differs from orig beyond what Save may
// change (see checkProto).
func protoProblems(orig, saved *onnxpb.ModelProto, producer, dataFile string, inline bool) []string {
	var probs []string
	errorf := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	o := proto.Clone(orig).(*onnxpb.ModelProto)
	s := proto.Clone(saved).(*onnxpb.ModelProto)

	found := 0
	s.MetadataProps = slices.DeleteFunc(s.MetadataProps, func(e *onnxpb.StringStringEntryProto) bool {
		if e.GetKey() != producerKey {
			return false
		}
		found++
		if e.GetValue() != producer {
			errorf("metadata %q = %q, want %q", producerKey, e.GetValue(), producer)
		}
		return true
	})
	if found != 1 {
		errorf("metadata_props holds %d %q entries, want 1", found, producerKey)
	}

	oi, si := o.GetGraph().GetInitializer(), s.GetGraph().GetInitializer()
	if len(oi) != len(si) {
		errorf("%d initializers, the input has %d", len(si), len(oi))
		return probs
	}
	for i := range oi {
		a, b := oi[i], si[i]
		if a.GetName() != b.GetName() {
			errorf("initializer %d is %q, the input's is %q", i, b.GetName(), a.GetName())
			continue
		}
		wantForm := storageForm(a)
		if wantForm == "external" && inline {
			wantForm = "raw_data"
			a.DataLocation = nil
		}
		if got := storageForm(b); got != wantForm {
			errorf("initializer %q stored as %s, the input's as %s", b.GetName(), got, storageForm(a))
		}
		if storageForm(b) == "external" {
			kv := map[string]string{}
			for _, e := range b.ExternalData {
				kv[e.GetKey()] = e.GetValue()
			}
			off, err := strconv.Atoi(kv["offset"])
			if kv["location"] != dataFile || err != nil || off%4096 != 0 {
				errorf("initializer %q: external data %v, want location %q and an offset aligned to 4096", b.GetName(), kv, dataFile)
			}
		}
		for _, tp := range []*onnxpb.TensorProto{a, b} {
			tp.RawData, tp.FloatData, tp.DoubleData, tp.Int32Data, tp.Int64Data, tp.Uint64Data, tp.ExternalData = nil, nil, nil, nil, nil, nil, nil
		}
	}
	if !proto.Equal(o, s) {
		errorf("the saved model differs from the input beyond initializer values and metadata: %s", protoDiff(o, s))
	}
	return probs
}

// storageForm says where a tensor keeps its values.
func storageForm(tp *onnxpb.TensorProto) string {
	switch {
	case tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL:
		return "external"
	case tp.RawData != nil:
		return "raw_data"
	case tp.FloatData != nil:
		return "float_data"
	case tp.DoubleData != nil:
		return "double_data"
	case tp.Int32Data != nil:
		return "int32_data"
	case tp.Int64Data != nil:
		return "int64_data"
	case tp.Uint64Data != nil:
		return "uint64_data"
	}
	return "empty"
}

// protoDiff names the fields of the model and of its graph that differ.
func protoDiff(a, b *onnxpb.ModelProto) string {
	var diffs []string
	fields := func(prefix string, x, y protoreflect.Message) {
		fds := x.Descriptor().Fields()
		for i := 0; i < fds.Len(); i++ {
			fd := fds.Get(i)
			if !x.Get(fd).Equal(y.Get(fd)) || x.Has(fd) != y.Has(fd) {
				diffs = append(diffs, prefix+string(fd.Name()))
			}
		}
		if !bytes.Equal(x.GetUnknown(), y.GetUnknown()) {
			diffs = append(diffs, prefix+"(unknown fields)")
		}
	}
	fields("", a.ProtoReflect(), b.ProtoReflect())
	if a.Graph != nil && b.Graph != nil {
		fields("graph.", a.Graph.ProtoReflect(), b.Graph.ProtoReflect())
	}
	return strings.Join(diffs, ", ")
}

// orcDiff summarises a comparison with ONNX Runtime.
type orcDiff struct {
	abs      float64 // max |ORT − ours|
	ratio    float64 // max |ORT − ours| / (ortAbs + ortRel·|ours|)
	roundoff float64 // max δ = |ours − exact|
	n        int     // values compared
}

func (d *orcDiff) add(e orcDiff) {
	d.abs, d.ratio, d.roundoff = math.Max(d.abs, e.abs), math.Max(d.ratio, e.ratio), math.Max(d.roundoff, e.roundoff)
	d.n += e.n
}

// compareORT checks ORT's value against ours (float32) element by element:
// |ORT − ours| ≤ ortAbs + ortRel·|ours|, and our round-off δ = |ours −
// exact| ≤ maxRoundoff, exact being ours in float64 (see the constants).
func compareORT(t *testing.T, what string, ort, ours, exact *importer.Tensor) orcDiff {
	t.Helper()
	var d orcDiff
	if ort == nil || exact == nil {
		t.Errorf("%s: missing (ONNX Runtime's %v, float64 reference %v)", what, ort != nil, exact != nil)
		return d
	}
	if !slices.Equal(ort.Shape, ours.Shape) || !slices.Equal(exact.Shape, ours.Shape) {
		t.Errorf("%s: ONNX Runtime's shape %v, ours %v, float64 %v", what, ort.Shape, ours.Shape, exact.Shape)
		return d
	}
	g, w, x := ort.Float64s(), ours.Float64s(), exact.Float64s()
	bad := 0
	for i := range w {
		diff := math.Abs(g[i] - w[i])
		tol := ortAbs + ortRel*math.Abs(w[i])
		delta := math.Abs(w[i] - x[i])
		if !(delta <= maxRoundoff) {
			t.Errorf("%s[%d]: ours %v in float32, %v in float64: round-off %.3g > %g", what, i, w[i], x[i], delta, maxRoundoff)
			delta = 0
		}
		if !(diff <= tol) {
			if bad == 0 {
				t.Errorf("%s[%d]: ONNX Runtime %v, ours %v, exact %v (|diff| %.3g > %.3g)", what, i, g[i], w[i], x[i], diff, tol)
			}
			bad++
		}
		if math.IsNaN(diff) {
			diff = math.Inf(1)
		}
		d.abs, d.ratio, d.roundoff = math.Max(d.abs, diff), math.Max(d.ratio, diff/tol), math.Max(d.roundoff, delta)
	}
	if bad > 1 {
		t.Errorf("%s: %d of %d values out of tolerance", what, bad, len(w))
	}
	d.n = len(w)
	return d
}

// frozenNames returns the float initializers the freeze globs match, and
// checks that every glob matches one and none is trained.
func frozenNames(t *testing.T, m *importer.Model, md *backend.Model, globs []string) []string {
	t.Helper()
	trained := map[string]bool{}
	for _, p := range md.Trainable() {
		trained[p.Name] = true
	}
	var out []string
	for _, g := range globs {
		n := 0
		for _, tp := range m.Proto.Graph.Initializer {
			if ok, _ := path.Match(g, tp.GetName()); ok && tp.GetDataType() == int32(importer.Float32) {
				out = append(out, tp.GetName())
				n++
				if trained[tp.GetName()] {
					t.Errorf("frozen initializer %q is trainable", tp.GetName())
				}
			}
		}
		if n == 0 {
			t.Fatalf("freeze pattern %q matches no float initializer", g)
		}
	}
	return out
}

// runningStats returns the initializers that BatchNormalization nodes read
// as running mean and variance.
func runningStats(m *importer.Model) []string {
	inits := map[string]bool{}
	for _, tp := range m.Proto.Graph.Initializer {
		inits[tp.GetName()] = true
	}
	var out []string
	for _, n := range m.Proto.Graph.Node {
		if n.GetOpType() != "BatchNormalization" || len(n.Input) < 5 {
			continue
		}
		for _, s := range n.Input[3:5] {
			if inits[s] {
				out = append(out, s)
			}
		}
	}
	return out
}

func params(md *backend.Model) []float32 {
	p := make([]float32, md.NumParams())
	md.Params(p)
	return p
}

func sameFloat32s(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// sameBits reports whether a and b have the same type, shape and bits.
func sameBits(a, b *importer.Tensor) bool {
	if a == nil || b == nil || a.Type != b.Type || !slices.Equal(a.Shape, b.Shape) {
		return false
	}
	return sameFloat32s(a.F32, b.F32) &&
		slices.EqualFunc(a.F64, b.F64, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }) &&
		slices.Equal(a.I64, b.I64)
}

// snapshot reads every entry of dir: files' contents, nil for folders.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if e.IsDir() {
			out[e.Name()] = nil
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// inputsKept reports whether every file of before is in after, unchanged.
func inputsKept(before, after map[string][]byte) bool {
	for name, b := range before {
		if a, ok := after[name]; !ok || !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// writeProto returns a writer of the model mk builds, as model.onnx.
func writeProto(mk func() *onnxpb.ModelProto) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "model.onnx")
		if err := models.WriteModel(p, mk()); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// copyFiles returns a writer copying the named files of src into the
// test's folder; the first is the model.
func copyFiles(src string, names ...string) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(src, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, names[0])
	}
}

// writeExternal moves every float initializer of mp into the data file
// data (packed, unaligned, as onnx's external_data_helper writes them),
// writes the model as name in dir and returns its path.
func writeExternal(t *testing.T, mp *onnxpb.ModelProto, dir, name, data string) string {
	t.Helper()
	var buf []byte
	for _, tp := range mp.Graph.Initializer {
		if tp.GetDataType() != int32(importer.Float32) {
			continue
		}
		v, err := importer.DecodeTensor(tp)
		if err != nil {
			t.Fatal(err)
		}
		off := len(buf)
		for _, x := range v.F32 {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		tp.RawData, tp.FloatData = nil, nil
		tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
		tp.ExternalData = []*onnxpb.StringStringEntryProto{
			{Key: proto.String("location"), Value: proto.String(data)},
			{Key: proto.String("offset"), Value: proto.String(strconv.Itoa(off))},
			{Key: proto.String("length"), Value: proto.String(strconv.Itoa(len(buf) - off))},
		}
	}
	if err := os.WriteFile(filepath.Join(dir, data), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := models.WriteModel(p, mp); err != nil {
		t.Fatal(err)
	}
	return p
}

// uniform returns n values drawn uniformly from [lo, hi).
func uniform(r *rand.Rand, n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float32()
	}
	return v
}

// labels returns n class labels in [0, classes).
func labels(r *rand.Rand, n, classes int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(r.IntN(classes))
	}
	return v
}

func lenetBatch(n int) func(*testing.T) map[string]*importer.Tensor {
	return func(*testing.T) map[string]*importer.Tensor {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		return map[string]*importer.Tensor{
			"x":     importer.NewFloat32("x", []int{n, 1, 36, 36}, uniform(r, n*36*36, 0, 1)),
			"left":  importer.NewInt64("left", []int{n}, labels(r, n, 10)),
			"right": importer.NewInt64("right", []int{n}, labels(r, n, 10)),
		}
	}
}

func mtanBatch(n int) func(*testing.T) map[string]*importer.Tensor {
	return func(*testing.T) map[string]*importer.Tensor {
		r := rand.New(rand.NewPCG(2, uint64(n)))
		h, w := mtanConfig.InputHeight, mtanConfig.InputWidth
		px := n * h * w
		normal := make([]float32, 3*px)
		for i := 0; i < n; i++ {
			for j := 0; j < h*w; j++ {
				v := uniform(r, 3, -1, 1)
				norm := float32(math.Sqrt(float64(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])))
				for c := range 3 {
					normal[(i*3+c)*h*w+j] = v[c] / norm
				}
			}
		}
		return map[string]*importer.Tensor{
			"x":        importer.NewFloat32("x", []int{n, 3, h, w}, uniform(r, 3*px, -1, 1)),
			"seg":      importer.NewInt64("seg", []int{n, h, w}, labels(r, px, mtanConfig.Classes)),
			"depth_t":  importer.NewFloat32("depth_t", []int{n, 1, h, w}, uniform(r, px, 0.5, 5)),
			"normal_t": importer.NewFloat32("normal_t", []int{n, 3, h, w}, normal),
		}
	}
}

func mlpBatch(n int) func(*testing.T) map[string]*importer.Tensor {
	return func(*testing.T) map[string]*importer.Tensor {
		r := rand.New(rand.NewPCG(3, uint64(n)))
		return map[string]*importer.Tensor{
			"x": importer.NewFloat32("x", []int{n, 4}, uniform(r, 4*n, -1, 1)),
			"t": importer.NewFloat32("t", []int{n, 2}, uniform(r, 2*n, -1, 1)),
		}
	}
}

// randomBiases gives every float initializer named *bias N(0, 0.1) values,
// as training would. A fresh MTAN has zero biases: its normal head then
// yields vectors of norm ~1e-10 at some pixels, where the unit
// normalisation turns float32 round-off into the output in any
// implementation (ONNX Runtime is itself 1.3e-4 from the float64 answer
// there), which says nothing about saving.
func randomBiases(t *testing.T, mp *onnxpb.ModelProto, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	n := 0
	for i, tp := range mp.Graph.Initializer {
		if !strings.HasSuffix(tp.GetName(), "bias") {
			continue
		}
		w, err := importer.DecodeTensor(tp)
		if err != nil {
			t.Fatal(err)
		}
		if w.F32 == nil {
			continue
		}
		for j := range w.F32 {
			w.F32[j] = float32(r.NormFloat64() * 0.1)
		}
		enc, err := importer.EncodeTensor(w)
		if err != nil {
			t.Fatal(err)
		}
		mp.Graph.Initializer[i] = enc
		n++
	}
	if n == 0 {
		t.Fatal("randomBiases: no float bias initializer found")
	}
}

// calibrateBN sets the running statistics of every BatchNormalization of
// mp to the batch statistics (mean, biased variance) its input has on
// batch when every BatchNormalization uses batch statistics, so that the
// model in inference mode computes on batch what it computes in training
// mode. A freshly initialised model (running mean 0, variance 1) does not
// normalise at all: MTAN's activations then grow to 1e5 and float32
// round-off alone moves its log-probabilities by 1e-3, which says nothing
// about saving. A pretrained model has calibrated statistics; so does this
// one.
func calibrateBN(t *testing.T, mp *onnxpb.ModelProto, specs []string, batch map[string]*importer.Tensor) {
	t.Helper()
	b, err := models.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := importer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []backend.Task
	for _, s := range specs {
		task, err := backend.ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	md, err := backend.Open(m, tasks, backend.Options{BatchNorm: "train"})
	if err != nil {
		t.Fatal(err)
	}
	var bns []*onnxpb.NodeProto
	var in []string
	for _, n := range mp.Graph.Node {
		if n.GetOpType() == "BatchNormalization" {
			bns = append(bns, n)
			in = append(in, n.Input[0])
		}
	}
	outs, err := md.Outputs(batch, in...)
	if err != nil {
		t.Fatal(err)
	}
	inits := map[string]*onnxpb.TensorProto{}
	for _, tp := range mp.Graph.Initializer {
		inits[tp.GetName()] = tp
	}
	for _, n := range bns {
		x := outs[n.Input[0]]
		if len(x.Shape) != 4 {
			t.Fatalf("BatchNormalization %q: input shape %v, want 4-D", n.GetName(), x.Shape)
		}
		N, C, HW := x.Shape[0], x.Shape[1], x.Shape[2]*x.Shape[3]
		v := x.Float64s()
		mean, variance := make([]float32, C), make([]float32, C)
		for c := range C {
			var s, ss float64
			for i := range N {
				for _, y := range v[(i*C+c)*HW : (i*C+c+1)*HW] {
					s += y
					ss += y * y
				}
			}
			k := float64(N * HW)
			mu := s / k
			mean[c], variance[c] = float32(mu), float32(math.Max(ss/k-mu*mu, 0))
		}
		for _, r := range []struct {
			name string
			v    []float32
		}{{n.Input[3], mean}, {n.Input[4], variance}} {
			tp := inits[r.name]
			if tp == nil || len(tp.Dims) != 1 || int(tp.Dims[0]) != C {
				t.Fatalf("BatchNormalization %q: running statistic %q is not a [%d] initializer", n.GetName(), r.name, C)
			}
			tp.RawData, tp.FloatData = nil, r.v
		}
	}
}

// TestSaveExternalDestinations covers what importer's own destination
// tests (inline models) do not: a model whose weights live in external
// data. A directory where the data file would go is refused without a
// partial file, with or without Force; without Force the input model and
// its data file are never overwritten; with Force, saving over the input
// reads the old data before replacing it, and the result reads back with
// the new weights and runs in ONNX Runtime.
func TestSaveExternalDestinations(t *testing.T) {
	cases := []struct {
		desc  string
		out   string // output file name in the folder holding the input
		mkdir string // a directory to create first
		force bool
		want  string // error substring; "" for success
	}{
		{"data file path is a directory", "o.onnx", "o.onnx.data", false, "o.onnx.data: is a directory"},
		{"data file path is a directory, force", "o.onnx", "o.onnx.data", true, "o.onnx.data: is a directory"},
		{"the input", "mlp_ext.onnx", "", false, "is the input model; paretonav never overwrites an input"},
		{"the input, force", "mlp_ext.onnx", "", true, "is the input model; paretonav never overwrites an input"},
		{"the input's data file, force", "mlp_ext.onnx.data", "", true, "is the input model's external data file"},
		{"a new model beside the input", "tuned.onnx", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			dir := t.TempDir()
			in := copyFiles("../../../importer/testdata", "mlp_ext.onnx", "mlp_ext.onnx.data")(t, dir)
			if c.mkdir != "" {
				if err := os.Mkdir(filepath.Join(dir, c.mkdir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			m, err := importer.Load(in)
			if err != nil {
				t.Fatal(err)
			}
			inits, err := m.Initializers()
			if err != nil {
				t.Fatal(err)
			}
			w := map[string]*importer.Tensor{}
			for _, name := range []string{"w1", "w2"} {
				v := *inits[name]
				v.F32 = slices.Clone(v.F32)
				for i := range v.F32 {
					v.F32[i] = -2*v.F32[i] + 0.25
				}
				w[name] = &v
			}
			before := snapshot(t, dir)
			out := filepath.Join(dir, c.out)
			err = importer.Save(out, m, w, importer.SaveOptions{Force: c.force, Producer: map[string]string{producerKey: "{}"}})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want it to contain %q", err, c.want)
				}
				after := snapshot(t, dir)
				if !inputsKept(before, after) || len(after) != len(before) {
					t.Errorf("the folder changed: %d files before, %d after, inputs kept: %v", len(before), len(after), inputsKept(before, after))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m1, err := importer.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m1.Initializers()
			if err != nil {
				t.Fatal(err)
			}
			for name, o := range inits {
				want := o
				if v, ok := w[name]; ok {
					want = v
				}
				if !sameBits(got[name], want) {
					t.Errorf("initializer %q does not read back as saved", name)
				}
			}
			if ents := snapshot(t, dir); len(ents) != len(before)+2 || !inputsKept(before, ents) {
				t.Errorf("%d files after saving beside the input, %d before (want the model and its data file added, the inputs kept)", len(ents), len(before))
			}
			ortcheck.Require(t)
			x := mlpBatch(3)(t)["x"]
			res, err := ortcheck.Run(out, map[string]*importer.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			// y = relu(x·w1 + b1)·w2, in float64.
			y := res["y"]
			if y == nil || !slices.Equal(y.Shape, []int{3, 2}) {
				t.Fatalf("ORT output y = %v, want shape [3 2]", y)
			}
			w1, b1, w2 := w["w1"].F32, inits["b1"].F32, w["w2"].F32
			for r := range 3 {
				h := make([]float64, 8)
				for j := range 8 {
					s := float64(b1[j])
					for k := range 4 {
						s += float64(x.F32[r*4+k]) * float64(w1[k*8+j])
					}
					h[j] = math.Max(s, 0)
				}
				for j := range 2 {
					s := 0.0
					for k := range 8 {
						s += h[k] * float64(w2[k*2+j])
					}
					if d := math.Abs(float64(y.F32[r*2+j]) - s); d > ortAbs+ortRel*math.Abs(s) {
						t.Errorf("ORT y[%d,%d] = %v, the saved weights give %v", r, j, y.F32[r*2+j], s)
					}
				}
			}
		})
	}
}

// TestProtoProblemsDetects checks that the proto comparison of
// TestTunedModelInterop sees what Save must not change: each mutation of a
// correctly saved model is reported, and the unmutated one is not.
func TestProtoProblemsDetects(t *testing.T) {
	dir := t.TempDir()
	in := copyFiles("../../../importer/testdata", "mlp_ext.onnx", "mlp_ext.onnx.data")(t, dir)
	m, err := importer.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.onnx")
	if err := importer.Save(out, m, nil, importer.SaveOptions{Producer: map[string]string{producerKey: "p"}}); err != nil {
		t.Fatal(err)
	}
	good, err := importer.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		desc   string
		mutate func(mp *onnxpb.ModelProto)
		want   string
	}{
		{"none", func(*onnxpb.ModelProto) {}, ""},
		{"producer value", func(mp *onnxpb.ModelProto) { mp.MetadataProps[len(mp.MetadataProps)-1].Value = proto.String("q") }, "metadata"},
		{"producer missing", func(mp *onnxpb.ModelProto) { mp.MetadataProps = mp.MetadataProps[:len(mp.MetadataProps)-1] }, "entries, want 1"},
		{"other metadata", func(mp *onnxpb.ModelProto) { mp.MetadataProps[0].Value = proto.String("x") }, "metadata_props"},
		{"node renamed", func(mp *onnxpb.ModelProto) { mp.Graph.Node[0].Name = proto.String("renamed") }, "graph.node"},
		{"doc string", func(mp *onnxpb.ModelProto) { mp.DocString = proto.String("changed") }, "doc_string"},
		{"opset", func(mp *onnxpb.ModelProto) { mp.OpsetImport[0].Version = proto.Int64(14) }, "opset_import"},
		{"initializer shape", func(mp *onnxpb.ModelProto) { mp.Graph.Initializer[0].Dims[0]++ }, "graph.initializer"},
		{"external moved inline", func(mp *onnxpb.ModelProto) {
			tp := mp.Graph.Initializer[0]
			tp.DataLocation, tp.ExternalData, tp.RawData = nil, nil, []byte{0, 0, 0, 0}
		}, "stored as raw_data"},
		{"data file elsewhere", func(mp *onnxpb.ModelProto) { mp.Graph.Initializer[0].ExternalData[0].Value = proto.String("x.data") }, "want location"},
		{"unknown field", func(mp *onnxpb.ModelProto) {
			mp.ProtoReflect().SetUnknown(protoreflect.RawFields{0xf8, 0x3f, 0x01})
		}, "unknown fields"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			mp := proto.Clone(good.Proto).(*onnxpb.ModelProto)
			c.mutate(mp)
			probs := protoProblems(m.Proto, mp, "p", importer.DataFileName(out), false)
			joined := strings.Join(probs, "; ")
			switch {
			case c.want == "" && len(probs) > 0:
				t.Errorf("problems reported for an unmutated save: %s", joined)
			case c.want != "" && !strings.Contains(joined, c.want):
				t.Errorf("problems %q, want one mentioning %q", joined, c.want)
			}
		})
	}
}
