package backend

import "math"

// Classification losses (PyTorch semantics, mean over non-ignored
// targets): nll reads log-probabilities [N, C, d...], ce reads logits
// (log-softmax over dimension 1 first). Targets are class indices [N, d...].

func init() {
	lossHeads["nll"] = lossHead{targetShape: classTargetShape, integer: true, build: classLoss(false)}
	lossHeads["ce"] = lossHead{targetShape: classTargetShape, integer: true, build: classLoss(true)}
}

func classLoss(logits bool) func(b *builder, t Task, out, target gnode) (gnode, error) {
	return func(b *builder, t Task, out, target gnode) (gnode, error) {
		s := out.Shape()
		N, C, inner := s[0], s[1], numel(s[2:])
		ignore := float64(t.IgnoreIndex)
		// logp returns log-probabilities of row (n, ·, j) into lp.
		logp := func(x []float64, n, j int, lp []float64) {
			base := n*C*inner + j
			for c := 0; c < C; c++ {
				lp[c] = x[base+c*inner]
			}
			if !logits {
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
			for c := range lp {
				lp[c] -= l
			}
		}
		count := func(tg []float64) float64 {
			k := 0.0
			for _, v := range tg {
				if v != ignore {
					k++
				}
			}
			return k
		}
		fwd := func(dst []float64, in [][]float64) {
			x, tg := in[0], in[1]
			lp := make([]float64, C)
			sum := 0.0
			for n := 0; n < N; n++ {
				for j := 0; j < inner; j++ {
					c := tg[n*inner+j]
					if c == ignore {
						continue
					}
					logp(x, n, j, lp)
					sum -= lp[int(c)]
				}
			}
			dst[0] = sum / count(tg) // 0/0 = NaN like PyTorch when all are ignored
		}
		bwd := func(_ int, dst []float64, in [][]float64, _, g []float64) {
			x, tg := in[0], in[1]
			k := g[0] / count(tg)
			lp := make([]float64, C)
			for n := 0; n < N; n++ {
				for j := 0; j < inner; j++ {
					c := tg[n*inner+j]
					if c == ignore {
						continue
					}
					base := n*C*inner + j
					if logits {
						logp(x, n, j, lp)
						for cc := 0; cc < C; cc++ {
							dst[base+cc*inner] += k * math.Exp(lp[cc])
						}
					}
					dst[base+int(c)*inner] -= k
				}
			}
		}
		return b.kernel("loss:"+t.Name, t.Loss, []gnode{out, target}, nil, fwd, bwd, []bool{true, false})
	}
}
