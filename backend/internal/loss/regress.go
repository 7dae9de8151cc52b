package loss

import (
	"math"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/importer"
)

// Regression losses, mean reduction: mse, l1, and depth_l1 (L1 averaged
// over the elements whose target is non-zero, as in MTAN's depth loss).

func init() {
	register(Kind{
		Name: "mse", Summary: "mean squared error", Target: "an array of the output's shape",
		TargetShape: sameShape, Count: countAll,
		Build: regressLoss(func(d float64) (float64, float64) { return d * d, 2 * d }, false),
	})
	register(Kind{
		Name: "l1", Summary: "mean absolute error", Target: "an array of the output's shape",
		TargetShape: sameShape, Count: countAll, Build: regressLoss(absAndSign, false),
	})
	register(Kind{
		Name:        "depth_l1",
		Summary:     "mean absolute error over the elements whose target is not 0 (MTAN's depth loss)",
		Target:      "a depth map of the output's shape (0 = no depth)",
		TargetShape: sameShape, Metrics: Depth, Count: countNonZero, Build: regressLoss(absAndSign, true),
	})
}

// countAll counts every element of the target.
func countAll(a *importer.Tensor, _ Head) (int, error) { return a.Len(), nil }

// countNonZero counts the target's elements that are not zero.
func countNonZero(a *importer.Tensor, _ Head) (int, error) {
	k := 0
	for _, x := range a.Float64s() {
		if x != 0 {
			k++
		}
	}
	return k, nil
}

func absAndSign(d float64) (float64, float64) {
	switch {
	case d > 0:
		return d, 1
	case d < 0:
		return -d, -1
	}
	return 0, 0
}

// regressLoss builds mean_i f(out_i − target_i) over all elements, or over
// those with a non-zero target when masked. f returns the value and the
// derivative.
func regressLoss(f func(d float64) (float64, float64), masked bool) func(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error) {
	return func(b *graph.Builder, h Head, out, target graph.Node) (graph.Node, error) {
		fwd, bwd := regressFwd[float64](f, masked), regressBwd[float64](f, masked)
		fwd32, bwd32g := regressFwd[float32](f, masked), regressBwd[float32](f, masked)
		bwd32 := func(k int, dst []float32, in [][]float32, out, g []float32) bool {
			bwd32g(k, dst, in, out, g)
			return true
		}
		return b.FillingKernel32("loss:"+h.Task, h.Kind, []graph.Node{out, target}, nil, fwd, bwd, []bool{true, false}, fwd32, bwd32)
	}
}

// regressCount is the number of elements a regression loss averages over:
// all, or those with a non-zero target when masked.
func regressCount[T graph.Float](tg []T, masked bool) float64 {
	if !masked {
		return float64(len(tg))
	}
	k := 0.0
	for _, v := range tg {
		if v != 0 {
			k++
		}
	}
	return k
}

// regressFwd is regressLoss's value on data of type T: the sum in float64
// over the elements in order, rounded once (float32 data gives the
// float64 path's value rounded: the graph.Forward32Func rule).
func regressFwd[T graph.Float](f func(d float64) (float64, float64), masked bool) func(dst []T, in [][]T) {
	return func(dst []T, in [][]T) {
		x, tg := in[0], in[1]
		s := 0.0
		for i, v := range x {
			if masked && tg[i] == 0 {
				continue
			}
			l, _ := f(float64(v) - float64(tg[i]))
			s += l
		}
		k := regressCount(tg, masked)
		if masked && k == 0 {
			dst[0] = T(math.NaN())
			return
		}
		dst[0] = T(s / k)
	}
}

// regressBwd is regressLoss's gradient with respect to the output,
// writing every element of dst (zero where masked out), each in float64
// rounded once.
func regressBwd[T graph.Float](f func(d float64) (float64, float64), masked bool) func(k int, dst []T, in [][]T, out, g []T) {
	return func(_ int, dst []T, in [][]T, _, g []T) {
		x, tg := in[0], in[1]
		k := float64(g[0]) / regressCount(tg, masked)
		for i, v := range x {
			if masked && tg[i] == 0 {
				dst[i] = 0
				continue
			}
			_, d := f(float64(v) - float64(tg[i]))
			dst[i] = T(k * d)
		}
	}
}
