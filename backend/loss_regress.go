package backend

import "math"

// Regression losses, mean reduction: mse, l1, and depth_l1 (L1 averaged
// over the elements whose target is non-zero, as in MTAN's depth loss).

func init() {
	lossHeads["mse"] = lossHead{targetShape: sameShape, build: regressLoss(func(d float64) (float64, float64) { return d * d, 2 * d }, false)}
	lossHeads["l1"] = lossHead{targetShape: sameShape, build: regressLoss(absAndSign, false)}
	lossHeads["depth_l1"] = lossHead{targetShape: sameShape, build: regressLoss(absAndSign, true)}
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
func regressLoss(f func(d float64) (float64, float64), masked bool) func(b *builder, t Task, out, target gnode) (gnode, error) {
	return func(b *builder, t Task, out, target gnode) (gnode, error) {
		count := func(tg []float64) float64 {
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
		fwd := func(dst []float64, in [][]float64) {
			x, tg := in[0], in[1]
			s := 0.0
			for i, v := range x {
				if masked && tg[i] == 0 {
					continue
				}
				l, _ := f(v - tg[i])
				s += l
			}
			dst[0] = s / count(tg)
			if masked && count(tg) == 0 {
				dst[0] = math.NaN()
			}
		}
		bwd := func(_ int, dst []float64, in [][]float64, _, g []float64) {
			x, tg := in[0], in[1]
			k := g[0] / count(tg)
			for i, v := range x {
				if masked && tg[i] == 0 {
					continue
				}
				_, d := f(v - tg[i])
				dst[i] = k * d
			}
		}
		return b.kernel("loss:"+t.Name, t.Loss, []gnode{out, target}, nil, fwd, bwd, []bool{true, false})
	}
}
