package kernels

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/sbinet/npyio/npz"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// oracleTol bounds |ours − oracle| / max(1, |oracle|) for float64 fixtures.
const oracleTol = 1e-9

// oracleCase is one row of testdata/cases.json (see make_fixtures.py).
type oracleCase struct {
	Name    string         `json:"name"`
	Op      string         `json:"op"`
	Attrs   map[string]any `json:"attrs"`
	Inputs  []string       `json:"inputs"`
	Output  string         `json:"output"`
	Output1 string         `json:"output1"`
	R       string         `json:"r"`
	Grads   []string       `json:"grads"`
}

func (c oracleCase) ints(k string) []int {
	v, ok := c.Attrs[k].([]any)
	if !ok {
		return nil
	}
	out := make([]int, len(v))
	for i, e := range v {
		out[i] = int(e.(float64))
	}
	return out
}

func (c oracleCase) floats(k string) []float64 {
	v, ok := c.Attrs[k].([]any)
	if !ok {
		return nil
	}
	out := make([]float64, len(v))
	for i, e := range v {
		out[i] = e.(float64)
	}
	return out
}

func (c oracleCase) num(k string) float64 {
	v, _ := c.Attrs[k].(float64)
	return v
}

func (c oracleCase) str(k string) string {
	v, _ := c.Attrs[k].(string)
	return v
}

func (c oracleCase) pool() PoolParams {
	return PoolParams{Kernel: c.ints("kernel_shape"), Strides: c.ints("strides"), Pads: c.ints("pads"),
		Dilations: c.ints("dilations"), CeilMode: c.num("ceil_mode") != 0, CountIncludePad: c.num("count_include_pad") != 0}
}

// builder returns the op under test and, for MaxPool, the indices builder.
func (c oracleCase) builder(t *testing.T) (b, idx builder) {
	switch c.Op {
	case "Conv":
		p := ConvParams{Strides: c.ints("strides"), Pads: c.ints("pads"), Dilations: c.ints("dilations"), Group: int(c.num("group"))}
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Conv(in[0], in[1], in[2], p) }, nil
	case "MaxPool":
		p := c.pool()
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				o, _, err := MaxPool(in[0], p)
				return o, err
			}, func(in []*gorgonia.Node) (*gorgonia.Node, error) {
				_, i, err := MaxPool(in[0], p)
				return i, err
			}
	case "MaxUnpool":
		p := c.pool()
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return MaxUnpool(in[0], in[1], p, c.ints("output_shape"))
		}, nil
	case "AveragePool":
		p := c.pool()
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return AveragePool(in[0], p) }, nil
	case "GlobalAveragePool":
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return GlobalAveragePool(in[0]) }, nil
	case "GlobalMaxPool":
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return GlobalMaxPool(in[0]) }, nil
	case "BatchNormalization":
		p := BatchNormParams{Epsilon: c.num("epsilon"), Training: c.num("training_mode") != 0}
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) {
			return BatchNorm(in[0], in[1], in[2], in[3], in[4], p)
		}, nil
	case "Pad":
		p := PadParams{Mode: c.str("mode"), Pads: c.ints("pads"), Value: c.num("value")}
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Pad(in[0], p) }, nil
	case "Resize":
		p := ResizeParams{Mode: c.str("mode"), CoordMode: c.str("coordinate_transformation_mode"),
			NearestMode: c.str("nearest_mode"), Scales: c.floats("scales"), Sizes: c.ints("sizes")}
		return func(in []*gorgonia.Node) (*gorgonia.Node, error) { return Resize(in[0], p) }, nil
	}
	t.Fatalf("case %s: unknown op %s", c.Name, c.Op)
	return nil, nil
}

// readArray reads one float64 array and its shape from the fixture file.
func readArray(t *testing.T, r *npz.Reader, key string) *tensor.Dense {
	t.Helper()
	key += ".npy" // numpy's savez appends the suffix to every name
	h := r.Header(key)
	if h == nil {
		t.Fatalf("fixture %s missing", key)
	}
	var d []float64
	if err := r.Read(key, &d); err != nil {
		t.Fatalf("fixture %s: %v", key, err)
	}
	shape := append([]int{}, h.Descr.Shape...)
	if len(shape) == 0 {
		shape = []int{1}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

func toInt64(t *tensor.Dense) *tensor.Dense {
	d := t.Data().([]float64)
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(out))
}

// maxDiff returns max |a − b| / max(1, |b|).
func maxDiff(t *testing.T, what string, a, b []float64) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, oracle has %d", what, len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		e := math.Abs(a[i]-b[i]) / math.Max(1, math.Abs(b[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// TestOracle compares forward values (and MaxPool indices) with PyTorch 1.13
// or the ONNX reference implementation, and gradients of Σ out ⊙ R with
// PyTorch autograd.
func TestOracle(t *testing.T) {
	raw, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []oracleCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	r, err := npz.Open("testdata/fixtures.npz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]bool{}
	worstFwd, worstGrad := 0.0, 0.0
	for _, c := range cases {
		seen[c.Op] = true
		t.Run(c.Name, func(t *testing.T) {
			b, ib := c.builder(t)
			vals := make([]*tensor.Dense, len(c.Inputs))
			for i, k := range c.Inputs {
				if k != "" {
					vals[i] = readArray(t, r, k)
				}
			}
			if c.Op == "MaxUnpool" {
				vals[1] = toInt64(vals[1])
			}
			want := readArray(t, r, c.Output)
			got := forward(t, vals, b)
			if !got.Shape().Eq(want.Shape()) {
				t.Fatalf("output shape %v, oracle %v", got.Shape(), want.Shape())
			}
			e := maxDiff(t, "output", got.Data().([]float64), want.Data().([]float64))
			worstFwd = math.Max(worstFwd, e)
			if e > oracleTol {
				t.Errorf("output differs from oracle: worst rel err %.3g", e)
			}
			if ib != nil && c.Output1 != "" {
				wi := readArray(t, r, c.Output1).Data().([]float64)
				gi := forward(t, vals, ib).Data().([]int64)
				for i := range wi {
					if float64(gi[i]) != wi[i] {
						t.Fatalf("indices[%d] = %d, oracle %v", i, gi[i], wi[i])
					}
				}
			}
			if c.R == "" {
				return
			}
			rr := readArray(t, r, c.R).Data().([]float64)
			g, in, _, loss := lossGraph(t, vals, b, rr)
			var wrt gorgonia.Nodes
			var keys []string
			for i, k := range c.Grads {
				if k != "" {
					wrt = append(wrt, in[i])
					keys = append(keys, k)
				}
			}
			for i, gv := range gradValues(t, g, loss, wrt) {
				e := maxDiff(t, keys[i], gv, readArray(t, r, keys[i]).Data().([]float64))
				worstGrad = math.Max(worstGrad, e)
				if e > oracleTol {
					t.Errorf("%s differs from PyTorch autograd: worst rel err %.3g", keys[i], e)
				}
			}
		})
	}
	for _, op := range []string{"Conv", "MaxPool", "MaxUnpool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization", "Pad", "Resize"} {
		if !seen[op] {
			t.Errorf("no oracle case for %s", op)
		}
	}
	t.Logf("%d cases; worst forward rel err %.3g, worst gradient rel err %.3g", len(cases), worstFwd, worstGrad)
}
