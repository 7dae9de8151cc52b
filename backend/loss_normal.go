package backend

import (
	"fmt"
	"math"
)

// normal_cos: 1 − the mean over valid pixels of the cosine between the
// predicted and the target normal [N, C, H, W] (channel dimension 1). Both
// vectors are normalised per pixel, so the loss lies in [0, 2] whatever
// the scale of the prediction; a pixel is valid when its target is not all
// zero, and a zero predicted normal counts as cosine 0 (the 90° that the
// angle metrics give it). For a prediction that is already unit length (as
// MTAN's model makes it) this is 1 − the mean dot product.

func init() {
	lossHeads["normal_cos"] = lossHead{targetShape: func(out []int) ([]int, error) {
		if len(out) < 2 {
			return nil, fmt.Errorf("normals must have shape [N, C, ...], have %v", out)
		}
		return sameShape(out)
	}, build: normalLoss}
}

// normalGeom is the layout of a normal_cos loss: N examples of C-vectors
// over inner positions.
type normalGeom struct{ N, C, inner int }

// pixel returns |x|, |t| and x·t at pixel (n, j).
func (g normalGeom) pixel(x, tg []float64, n, j int) (nx, nt, dot float64) {
	for c := 0; c < g.C; c++ {
		i := (n*g.C+c)*g.inner + j
		nx += x[i] * x[i]
		nt += tg[i] * tg[i]
		dot += x[i] * tg[i]
	}
	return math.Sqrt(nx), math.Sqrt(nt), dot
}

// count is the number of valid pixels (target not all zero).
func (g normalGeom) count(tg []float64) float64 {
	k := 0.0
	for n := 0; n < g.N; n++ {
		for j := 0; j < g.inner; j++ {
			if _, nt, _ := g.pixel(tg, tg, n, j); nt != 0 {
				k++
			}
		}
	}
	return k
}

func normalLoss(b *builder, t Task, out, target gnode) (gnode, error) {
	s := out.Shape()
	g := normalGeom{N: s[0], C: s[1], inner: numel(s[2:])}
	fwd := func(dst []float64, in [][]float64) {
		x, tg := in[0], in[1]
		sum := 0.0
		for n := 0; n < g.N; n++ {
			for j := 0; j < g.inner; j++ {
				nx, nt, dot := g.pixel(x, tg, n, j)
				if nt == 0 || nx == 0 {
					continue // invalid pixel, or cosine 0
				}
				sum += dot / (nx * nt)
			}
		}
		k := g.count(tg)
		if k == 0 {
			dst[0] = math.NaN()
			return
		}
		dst[0] = 1 - sum/k
	}
	// ∂cos/∂x = (t/|t| − cos·x/|x|)/|x|; a zero prediction gets the zero
	// subgradient.
	bwd := func(_ int, dst []float64, in [][]float64, _, gr []float64) {
		x, tg := in[0], in[1]
		k := -gr[0] / g.count(tg)
		for n := 0; n < g.N; n++ {
			for j := 0; j < g.inner; j++ {
				nx, nt, dot := g.pixel(x, tg, n, j)
				if nt == 0 || nx == 0 {
					continue
				}
				cos := dot / (nx * nt)
				for c := 0; c < g.C; c++ {
					i := (n*g.C+c)*g.inner + j
					dst[i] = k * (tg[i]/nt - cos*x[i]/nx) / nx
				}
			}
		}
	}
	return b.kernel("loss:"+t.Name, t.Loss, []gnode{out, target}, nil, fwd, bwd, []bool{true, false})
}
