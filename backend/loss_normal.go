package backend

import (
	"fmt"
	"math"
)

// normal_cos: 1 − mean over valid pixels of the dot product of predicted
// and target normals [N, C, H, W] (channel dimension 1); a pixel is valid
// when its target is not all zero. The prediction is expected to be
// normalised already (as MTAN's model does).

func init() {
	lossHeads["normal_cos"] = lossHead{targetShape: func(out []int) ([]int, error) {
		if len(out) < 2 {
			return nil, fmt.Errorf("normals must have shape [N, C, ...], have %v", out)
		}
		return sameShape(out)
	}, build: normalLoss}
}

func normalLoss(b *builder, t Task, out, target gnode) (gnode, error) {
	s := out.Shape()
	N, C, inner := s[0], s[1], numel(s[2:])
	valid := func(tg []float64, n, j int) bool {
		for c := 0; c < C; c++ {
			if tg[(n*C+c)*inner+j] != 0 {
				return true
			}
		}
		return false
	}
	count := func(tg []float64) float64 {
		k := 0.0
		for n := 0; n < N; n++ {
			for j := 0; j < inner; j++ {
				if valid(tg, n, j) {
					k++
				}
			}
		}
		return k
	}
	fwd := func(dst []float64, in [][]float64) {
		x, tg := in[0], in[1]
		sum := 0.0
		for n := 0; n < N; n++ {
			for j := 0; j < inner; j++ {
				if !valid(tg, n, j) {
					continue
				}
				for c := 0; c < C; c++ {
					i := (n*C+c)*inner + j
					sum += x[i] * tg[i]
				}
			}
		}
		k := count(tg)
		if k == 0 {
			dst[0] = math.NaN()
			return
		}
		dst[0] = 1 - sum/k
	}
	bwd := func(_ int, dst []float64, in [][]float64, _, g []float64) {
		tg := in[1]
		k := -g[0] / count(tg)
		for n := 0; n < N; n++ {
			for j := 0; j < inner; j++ {
				if !valid(tg, n, j) {
					continue
				}
				for c := 0; c < C; c++ {
					i := (n*C+c)*inner + j
					dst[i] = k * tg[i]
				}
			}
		}
	}
	return b.kernel("loss:"+t.Name, t.Loss, []gnode{out, target}, nil, fwd, bwd, []bool{true, false})
}
