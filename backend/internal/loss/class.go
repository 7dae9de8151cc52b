package loss

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
)

// Classification losses (PyTorch semantics, mean over non-ignored
// targets): nll reads log-probabilities [N, C, d...], ce reads logits
// (log-softmax over dimension 1 first). Targets are class indices [N, d...].

func init() {
	ignore := []Option{{Key: "ignore_index", Doc: "the target value that is skipped (PyTorch's ignore_index)", Default: -100}}
	register(Kind{
		Name:        "nll",
		Summary:     "negative log-likelihood of the target classes, the mean over the targets not ignored (PyTorch's nll_loss)",
		Target:      "class labels (int64) for log-probabilities [N,C] or [N,C,H,W]",
		TargetShape: classTargetShape, IntegerTarget: true, Options: ignore, Metrics: Classes,
		Count: countClasses, Build: classLoss(false),
	})
	register(Kind{
		Name:        "ce",
		Summary:     "cross-entropy: log-softmax over dimension 1, then nll (PyTorch's cross_entropy)",
		Target:      "class labels (int64) for logits [N,C] or [N,C,H,W]",
		TargetShape: classTargetShape, IntegerTarget: true, Options: ignore, Metrics: Classes,
		Count: countClasses, Build: classLoss(true),
	})
}

// countClasses counts the targets that are not ignored.
func countClasses(a *importer.Tensor, h Head) (int, error) {
	k, ignore := 0, float64(h.IgnoreIndex)
	for _, x := range a.Float64s() {
		if x != ignore {
			k++
		}
	}
	return k, nil
}

func classLoss(logits bool) func(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error) {
	return func(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error) {
		s := out.Shape()
		c := classGeom{N: s[0], C: s[1], inner: shape.Numel(s[2:]), ignore: float64(h.IgnoreIndex), logits: logits}
		fwd := func(dst []float64, in [][]float64) { classForward(c, dst, in[0], in[1]) }
		bwd := func(_ int, dst []float64, in [][]float64, _, g []float64) { classBackward(c, dst, in[0], in[1], g[0]) }
		fwd32 := func(dst []float32, in [][]float32) { classForward(c, dst, in[0], in[1]) }
		bwd32 := func(k int, dst []float32, in [][]float32, _, g []float32) bool {
			if k != 0 {
				return false
			}
			classBackward(c, dst, in[0], in[1], float64(g[0]))
			return true
		}
		return b.FillingKernel32("loss:"+h.Task, h.Kind, []graph.Node{out, target}, nil, fwd, bwd, []bool{true, false}, fwd32, bwd32)
	}
}

// classGeom is the layout of a classification loss: N samples of C classes
// over inner positions, the target index that is ignored, and whether the
// output holds logits (ce) rather than log-probabilities (nll).
type classGeom struct {
	N, C, inner int
	ignore      float64
	logits      bool
}

// classRow writes the log-probabilities of row (n, ·, j) of x into lp, in
// float64 whatever T is.
func classRow[T graph.Float](c classGeom, x []T, n, j int, lp []float64) {
	base := n*c.C*c.inner + j
	for k := range lp {
		lp[k] = float64(x[base+k*c.inner])
	}
	if !c.logits {
		return
	}
	mx := math.Inf(-1)
	for _, v := range lp {
		mx = math.Max(mx, v)
	}
	sum := 0.0
	for _, v := range lp {
		sum += math.Exp(v - mx)
	}
	l := mx + math.Log(sum)
	for k := range lp {
		lp[k] -= l
	}
}

// classCount is the number of targets that are not ignored.
func classCount[T graph.Float](c classGeom, tg []T) float64 {
	k := 0.0
	for _, v := range tg {
		if float64(v) != c.ignore {
			k++
		}
	}
	return k
}

// classForward writes the mean loss over the targets not ignored into
// dst[0], computed in float64 and rounded once (PyTorch: 0/0 = NaN when
// all are ignored).
func classForward[T graph.Float](c classGeom, dst, x, tg []T) {
	lp := make([]float64, c.C)
	sum := 0.0
	for n := 0; n < c.N; n++ {
		for j := 0; j < c.inner; j++ {
			cl := float64(tg[n*c.inner+j])
			if cl == c.ignore {
				continue
			}
			classRow(c, x, n, j, lp)
			sum -= lp[int(cl)]
		}
	}
	dst[0] = T(sum / classCount(c, tg))
}

// classBackward writes the gradient of the loss times g with respect to
// the output into every element of dst: each gets at most one float64
// term, rounded once, computed as the terms added to a zero would be, and
// zero otherwise (the targets are classes in [0, C) or the ignored index:
// Model.CheckBatch, and classForward's lp[cl] fails on others before the
// gradient runs). nll's gradient, one term per pixel, is written row
// by row in one pass (not zeroed first and then scattered into).
func classBackward[T graph.Float](c classGeom, dst, x, tg []T, g float64) {
	k := g / classCount(c, tg)
	if !c.logits {
		v := T(0 - k) // as 0 −= k: +0 for k = 0
		for n := 0; n < c.N; n++ {
			t := tg[n*c.inner : (n+1)*c.inner]
			for cc := 0; cc < c.C; cc++ {
				row := dst[(n*c.C+cc)*c.inner:][:c.inner]
				for j, tv := range t {
					row[j] = 0
					if cl := float64(tv); cl != c.ignore && int(cl) == cc {
						row[j] = v
					}
				}
			}
		}
		return
	}
	lp := make([]float64, c.C)
	for n := 0; n < c.N; n++ {
		for j := 0; j < c.inner; j++ {
			cl := float64(tg[n*c.inner+j])
			base := n*c.C*c.inner + j
			if cl == c.ignore {
				for cc := 0; cc < c.C; cc++ {
					dst[base+cc*c.inner] = 0
				}
				continue
			}
			classRow(c, x, n, j, lp)
			for cc := 0; cc < c.C; cc++ {
				v := 0.0
				v += k * math.Exp(lp[cc])
				if cc == int(cl) {
					v -= k
				}
				dst[base+cc*c.inner] = T(v)
			}
		}
	}
}
