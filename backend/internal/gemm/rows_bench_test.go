package gemm

import (
	"math/rand"
	"testing"
)

// BenchmarkRowsInPlace times, with every micro-kernel this CPU runs, one
// sample of LeNet's first convolution (10 filters of 1×9×9 over 36×36):
// the forward product over the taps' rows read in place (SgemmRows)
// against the rows copied into a matrix and Sgemm, and the weight
// gradient's segmented dot products (SdotRowsSeg) against the output
// gradient spread to rows of width 36 and SdotRows.
func BenchmarkRowsInPlace(b *testing.B) {
	const m, taps, w, oh, ow = 10, 9, 36, 28, 28
	l := (oh-1)*w + ow
	r := rand.New(rand.NewSource(1))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	x, wt, gy := fill(w*w), fill(m*taps*taps), fill(m*oh*ow)
	offs := make([]int, 0, taps*taps)
	for ki := 0; ki < taps; ki++ {
		for kj := 0; kj < taps; kj++ {
			offs = append(offs, ki*w+kj)
		}
	}
	k := len(offs)
	col, out, dw, pad := make([]float32, k*l), make([]float32, m*l), make([]float32, m*k), make([]float32, m*l)
	for _, kr := range kernels() {
		run := func(name string, f func()) {
			b.Run(kr.name+"/"+name, func(b *testing.B) {
				defer func(k *kernel) { active = k }(active)
				active = kr
				for b.Loop() {
					f()
				}
			})
		}
		run("fwd/inplace", func() { SgemmRows(m, l, k, wt, k, x, offs, out, l) })
		run("fwd/copied", func() {
			for i, o := range offs {
				copy(col[i*l:(i+1)*l], x[o:o+l])
			}
			Sgemm(false, false, m, l, k, 1, wt, k, col, l, 0, out, l)
		})
		run("dw/segments", func() {
			clear(dw)
			SdotRowsSeg(m, k, Segs{K: ow, N: oh, SA: ow, SB: w}, gy, oh*ow, x, offs, dw, k)
		})
		run("dw/spread", func() {
			clear(dw)
			for i := 0; i < m; i++ {
				for oi := 0; oi < oh; oi++ {
					copy(pad[i*l+oi*w:][:ow], gy[i*oh*ow+oi*ow:][:ow])
					if oi+1 < oh {
						clear(pad[i*l+oi*w+ow : i*l+(oi+1)*w])
					}
				}
			}
			SdotRows(m, k, l, pad, l, x, offs, dw, k)
		})
	}
}
