package gemm

// TransposeRows writes rows [r0, r1) of the rows×cols matrix src (row
// stride lds) transposed into dst (row stride ldd): dst[c·ldd+r] =
// src[r·lds+c] for r0 ≤ r < r1 and every c < cols, each value moved
// exactly (−0 stays −0), and adds +0 to every value it wrote when
// plusZero (−0 becomes +0, as a gradient's 0 + g does). Blocks of 8 rows
// by 8 columns go through the AVX2 transpose that packing uses (8 loads, 8
// stores), where a strided gather moves one value per load; the edges run
// in Go. Call it only where CanTransposeRows reports true.
func TransposeRows(dst []float32, ldd int, src []float32, lds, cols, r0, r1 int, plusZero bool) {
	if !packAsm {
		panic("gemm: TransposeRows without AVX2")
	}
	if r1 <= r0 || cols <= 0 {
		return
	}
	_ = src[(r1-1)*lds+cols-1] // the rows lie in src
	_ = dst[(cols-1)*ldd+r1-1] // and their columns in dst
	n8 := cols / 8
	r := r0
	for ; r+8 <= r1; r += 8 {
		if n8 > 0 {
			transpose8(n8, &src[r*lds], lds, &dst[r], ldd)
			if plusZero {
				for c := range 8 * n8 {
					d := dst[c*ldd+r:][:8]
					for i, v := range d {
						d[i] = 0 + v
					}
				}
			}
		}
		for c := 8 * n8; c < cols; c++ { // the last cols mod 8 columns
			d := dst[c*ldd+r:][:8]
			for i := range d {
				d[i] = src[(r+i)*lds+c]
				if plusZero {
					d[i] += 0
				}
			}
		}
	}
	for ; r < r1; r++ { // the last rows, fewer than 8
		s := src[r*lds:][:cols]
		for c, v := range s {
			if plusZero {
				v += 0
			}
			dst[c*ldd+r] = v
		}
	}
}

// CanTransposeRows reports whether this CPU runs TransposeRows (it has
// AVX2); elsewhere callers keep their own loops.
func CanTransposeRows() bool { return packAsm }
