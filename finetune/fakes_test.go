package finetune_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// quad is a two-task problem without data: ℓ_i = ½‖θ − c_i‖². Its Pareto
// set is the segment between c_0 and c_1.
type quad struct {
	theta   []float32
	centers [][]float64
	calls   int
	nanAt   map[int]bool // evaluations (1-based) that return NaN
	nanFrom int          // every evaluation from this one returns NaN (0: never)
	// blowAt and blowFrom are like nanAt and nanFrom, but the losses are
	// multiplied by 1e4 (finite: a diverged model, not a non-finite one).
	blowAt   map[int]bool
	blowFrom int
	bound    float64 // losses are NaN where some |θ_j| > bound (0: no bound)
	// nanAsError reports a bad evaluation as an error matching
	// png.ErrNonFinite (as the ONNX backend does) instead of NaN values.
	nanAsError bool
}

func newQuad(init ...float32) *quad {
	n := len(init)
	c0, c1 := make([]float64, n), make([]float64, n)
	c0[0], c1[0] = 1, -1
	if n > 1 {
		c0[1], c1[1] = 1, 1
	}
	return &quad{theta: append([]float32(nil), init...), centers: [][]float64{c0, c1}}
}

func (q *quad) Tasks() []string      { return []string{"a", "b"} }
func (q *quad) NumParams() int       { return len(q.theta) }
func (q *quad) Params(dst []float32) { copy(dst, q.theta) }
func (q *quad) SetParams(src []float32) error {
	copy(q.theta, src)
	return nil
}

func (q *quad) Evaluate(_ finetune.Batch, losses []float64, jac *png.Jacobian) error {
	q.calls++
	bad := q.nanAt[q.calls] || (q.nanFrom > 0 && q.calls >= q.nanFrom)
	for _, t := range q.theta {
		if q.bound > 0 && math.Abs(float64(t)) > q.bound {
			bad = true
		}
	}
	for i, c := range q.centers {
		var s float64
		for j, t := range q.theta {
			d := float64(t) - c[j]
			s += d * d
			if jac != nil {
				jac.Row(i)[j] = float32(d)
			}
		}
		losses[i] = s / 2
		if q.blowAt[q.calls] || (q.blowFrom > 0 && q.calls >= q.blowFrom) {
			losses[i] *= 1e4
		}
		if bad {
			losses[i] = math.NaN()
		}
	}
	if bad && q.nanAsError {
		return fmt.Errorf("quad: evaluation %d: loss is NaN: %w", q.calls, png.ErrNonFinite)
	}
	return nil
}

// regression is a two-task problem with data: ℓ_i = mean over the batch of
// (x·θ − y_i)², with arrays "x" (N×n), "y0" and "y1" (N).
type regression struct{ theta []float32 }

func (r *regression) Tasks() []string      { return []string{"y0", "y1"} }
func (r *regression) NumParams() int       { return len(r.theta) }
func (r *regression) Params(dst []float32) { copy(dst, r.theta) }
func (r *regression) SetParams(src []float32) error {
	copy(r.theta, src)
	return nil
}

func (r *regression) Evaluate(b finetune.Batch, losses []float64, jac *png.Jacobian) error {
	x := b["x"]
	N, n := x.Shape[0], x.Shape[1]
	if jac != nil {
		clear(jac.Data)
	}
	for i, name := range []string{"y0", "y1"} {
		y := b[name].F32
		losses[i] = 0
		for e := 0; e < N; e++ {
			var pred float64
			for j := 0; j < n; j++ {
				pred += float64(x.F32[e*n+j]) * float64(r.theta[j])
			}
			d := pred - float64(y[e])
			losses[i] += d * d / float64(N)
			if jac != nil {
				for j := 0; j < n; j++ {
					jac.Row(i)[j] += float32(2 * d * float64(x.F32[e*n+j]) / float64(N))
				}
			}
		}
	}
	return nil
}

// gd is a hand-written method: v = Jᵀc (plain descent on F), reporting
// g = the squared norm of the min-norm point of the two task gradients.
type gd struct{}

func (gd) Direction(dst []float32, J png.Jacobian, grad png.Gradient, st *png.State) (png.Info, error) {
	var k00, k01, k11, vn float64
	a, b := J.Row(0), J.Row(1)
	for j := range dst {
		v := grad.Coef[0]*float64(a[j]) + grad.Coef[1]*float64(b[j])
		dst[j] = float32(v)
		vn += v * v
		k00 += float64(a[j]) * float64(a[j])
		k01 += float64(a[j]) * float64(b[j])
		k11 += float64(b[j]) * float64(b[j])
	}
	w := 0.5
	if d := k00 - 2*k01 + k11; d > 0 {
		w = math.Min(1, math.Max(0, (k11-k01)/d))
	}
	g := w*w*k00 + 2*w*(1-w)*k01 + (1-w)*(1-w)*k11
	st.Steps++
	st.AvgSqNorm += (k00 + k11) / 2
	return png.Info{G: g, VNorm: math.Sqrt(vn), Omega: []float64{w, 1 - w}, Lambda: []float64{0, 0}}, nil
}

// weighted is the criterion F = w0·a + w1·b.
type weighted struct{ w0, w1 float64 }

func (weighted) Tasks() []string { return []string{"a", "b"} }
func (weighted) String() string  { return "weighted" }
func (c weighted) Eval(l, grad []float64) (float64, error) {
	if grad != nil {
		grad[0], grad[1] = c.w0, c.w1
	}
	return c.w0*l[0] + c.w1*l[1], nil
}

// regressionData returns n examples of a noiseless two-target problem in
// 3 parameters.
func regressionData(n int) *finetune.Dataset {
	x := make([]float32, n*3)
	y0, y1 := make([]float32, n), make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for e := 0; e < n; e++ {
		for j := 0; j < 3; j++ {
			x[e*3+j] = float32(rng.NormFloat64())
		}
		y0[e] = x[e*3] + 2*x[e*3+1]
		y1[e] = -x[e*3+1] + x[e*3+2]
	}
	return &finetune.Dataset{Arrays: finetune.Batch{
		"x":  importer.NewFloat32("x", []int{n, 3}, x),
		"y0": importer.NewFloat32("y0", []int{n}, y0),
		"y1": importer.NewFloat32("y1", []int{n}, y1),
	}}
}
