package backend

import (
	"math"
	"math/rand"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
)

// stepCase is one model and batch timed by BenchmarkStep. The shapes match
// bench/torch_step.py: lenet2 is its "lenet2" model, mtan_small its "mtan"
// (the fixture exported by backend/testdata/torch/make_fixtures.py).
type stepCase struct {
	name  string
	model func(tb testing.TB) *importer.Model
	tasks []string
	batch func(n int) map[string]*importer.Tensor
	n     int
	// noIntValues: the step computes no int64 values (TestPoolInts skips
	// the model)
	noIntValues bool
}

func decodeProto(tb testing.TB, mp *onnxpb.ModelProto) *importer.Model {
	tb.Helper()
	raw, err := proto.Marshal(mp)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := importer.Decode(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// benchLabels returns n int64 class labels in [0, c) as a tensor of shape s.
func benchLabels(r *rand.Rand, name string, c int, s ...int) *importer.Tensor {
	d := make([]int64, shape.Numel(s))
	for i := range d {
		d[i] = int64(r.Intn(c))
	}
	return importer.NewInt64(name, s, d)
}

// benchFloats returns a float32 tensor of shape s with values f().
func benchFloats(name string, f func() float64, s ...int) *importer.Tensor {
	d := make([]float32, shape.Numel(s))
	for i := range d {
		d[i] = float32(f())
	}
	return importer.NewFloat32(name, s, d)
}

// mtanBatch is an MTAN batch: x [n,3,h,w], seg labels, positive depth and
// unit normals.
func mtanBatch(n, h, w, classes int) map[string]*importer.Tensor {
	r := rand.New(rand.NewSource(2))
	nrm := make([]float32, n*3*h*w)
	for i := 0; i < n; i++ {
		for p := 0; p < h*w; p++ {
			var v [3]float64
			s := 0.0
			for c := range v {
				v[c] = r.NormFloat64()
				s += v[c] * v[c]
			}
			for c := range v {
				nrm[(i*3+c)*h*w+p] = float32(v[c] / math.Sqrt(s))
			}
		}
	}
	return map[string]*importer.Tensor{
		"x":        benchFloats("x", r.NormFloat64, n, 3, h, w),
		"seg":      benchLabels(r, "seg", classes, n, h, w),
		"depth_t":  benchFloats("depth_t", func() float64 { return 0.5 + r.Float64() }, n, 1, h, w),
		"normal_t": importer.NewFloat32("normal_t", []int{n, 3, h, w}, nrm),
	}
}

// openStepCase opens sc's model with its tasks and default options,
// failing the test on an error.
func openStepCase(t testing.TB, sc stepCase) *Model {
	t.Helper()
	return openStepCaseWith(t, sc, Options{})
}

// execWith is the Options whose executor options are the defaults as set
// changes them.
func execWith(set func(o *execOptions)) Options {
	o := defaultExec()
	set(&o)
	return Options{exec: &o}
}

// openStepCaseWith is openStepCase with options opt.
func openStepCaseWith(t testing.TB, sc stepCase, opt Options) *Model {
	t.Helper()
	md, err := Open(sc.model(t), mustTasks(t, sc.tasks...), opt)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// attnCase is a step case of a twin of bench/step_models.py's tfblock in
// testdata/attn (bench/attn/make_attn.py): one ViT encoder block, hidden
// 128, 2 heads, batch 4, its two classification tasks; file names the
// export (TorchScript's at opset 17 or 14, or dynamo's).
func attnCase(name, file string) stepCase {
	return twinCase(name, "attn", file, "tfblock1.npz", 4, "a:nll:logp_a:a", "b:nll:logp_b:b")
}

// unetCase is a step case of the UNet twin in testdata/unet
// (bench/unet/make_unet.py): ConvTranspose, bilinear Resize, GroupNorm and
// InstanceNorm blocks and skip concatenations at width 16, batch 2 of
// 3×64×64, its per-pixel nll and depth mse tasks; file names the export
// (TorchScript's or dynamo's, both opset 20).
func unetCase(name, file string) stepCase {
	return twinCase(name, "unet", file, "unet16.npz", 2, "seg:nll:seg_logp:seg", "depth:mse:depth:depth")
}

// twinCase is a step case of a PyTorch 2.15 twin in testdata/dir: the
// export file, its examples in data (the first n of them a batch) and
// its tasks.
func twinCase(name, dir, file, data string, n int, tasks ...string) stepCase {
	return stepCase{
		name: name,
		model: func(tb testing.TB) *importer.Model {
			m, err := importer.Load(filepath.Join("testdata", dir, file))
			if err != nil {
				tb.Fatal(err)
			}
			return m
		},
		tasks: tasks,
		batch: func(n int) map[string]*importer.Tensor {
			arrays, err := npz.Read(filepath.Join("testdata", dir, data))
			if err != nil {
				panic(err)
			}
			for k, a := range arrays { // the first n examples
				per := a.Len() / a.Shape[0]
				s := append([]int{n}, a.Shape[1:]...)
				if a.F32 != nil {
					arrays[k] = importer.NewFloat32(a.Name, s, a.F32[:n*per])
				} else {
					arrays[k] = importer.NewInt64(a.Name, s, a.I64[:n*per])
				}
			}
			return arrays
		},
		n:           n,
		noIntValues: true,
	}
}

var stepCases = []stepCase{
	{
		name:  "lenet2",
		model: func(tb testing.TB) *importer.Model { return decodeProto(tb, models.LeNet2(1)) },
		tasks: []string{"left:nll:logp_left:left", "right:nll:logp_right:right"},
		batch: func(n int) map[string]*importer.Tensor {
			r := rand.New(rand.NewSource(1))
			return map[string]*importer.Tensor{
				"x":     benchFloats("x", r.Float64, n, 1, 36, 36),
				"left":  benchLabels(r, "left", 10, n),
				"right": benchLabels(r, "right", 10, n),
			}
		},
		n: 256,
	},
	{
		name: "mtan_small",
		model: func(tb testing.TB) *importer.Model {
			m, err := importer.Load(filepath.Join("testdata", "torch", "mtan_op13.onnx"))
			if err != nil {
				tb.Fatal(err)
			}
			return m
		},
		tasks: []string{"seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"},
		batch: func(n int) map[string]*importer.Tensor { return mtanBatch(n, 32, 32, 13) },
		n:     8,
	},
	{
		name: "mtan_w8",
		model: func(tb testing.TB) *importer.Model {
			return decodeProto(tb, models.MTAN(models.MTANConfig{Width: 8, InputHeight: 32, InputWidth: 32, Seed: 1}))
		},
		tasks: []string{"seg:nll:seg_logp:seg", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"},
		batch: func(n int) map[string]*importer.Tensor { return mtanBatch(n, 32, 32, 13) },
		n:     8,
	},
	attnCase("tfblock1_ts", "tfblock1_ts.onnx"),
	attnCase("tfblock1_ts14", "tfblock1_ts14.onnx"),
	attnCase("tfblock1_dynopt", "tfblock1_dynopt.onnx"),
	unetCase("unet16_ts", "unet16_ts.onnx"),
	unetCase("unet16_dynopt", "unet16_dynopt.onnx"),
}

// cpuTime is the user+system CPU time of the process so far. On a shared
// machine it is steadier than wall time (which BenchmarkStep also reports).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStep times one Evaluate with a Jacobian (forward pass, per-task
// gradients) in float32, as one PNG step needs: lenet2 at batch 256 with
// two tasks, two MTANs at batch 8 (32×32) with three tasks, a ViT encoder
// block's TorchScript (opsets 17 and 14: LayerNorm as nine ops) and dynamo
// exports at batch 4 with two tasks, and a UNet's TorchScript and dynamo
// exports at batch 2 (64×64) with two tasks.
func BenchmarkStep(b *testing.B) {
	for _, sc := range stepCases {
		b.Run(sc.name, func(b *testing.B) {
			m := sc.model(b)
			md, err := Open(m, mustTasks(b, sc.tasks...), Options{})
			if err != nil {
				b.Fatal(err)
			}
			batch := sc.batch(sc.n)
			losses := make([]float64, len(sc.tasks))
			jac := png.NewJacobian(len(sc.tasks), md.NumParams())
			jp := &jac
			if err := md.Evaluate(batch, losses, jp); err != nil { // compile
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if err := md.Evaluate(batch, losses, jp); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
