package gemm

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestSgemmRows checks SgemmRows against Sgemm over the same rows
// gathered into a matrix, bit for bit (the same kernels sum each element
// in the same order), for overlapping and scattered rows, partial panels
// of rows and columns, several blocks of k and of n, with and without the
// 12-row kernel, the last partial panel of columns packed (rows ending
// near b's end) or read in place (room after them); that c outside the m×n block is kept; and that a row
// outside b panics; with every micro-kernel this CPU runs.
func TestSgemmRows(t *testing.T) {
	if !Accelerated() || len(kernels()) == 0 {
		t.Skip("no micro-kernel on this CPU: SgemmRows declines")
	}
	for _, kr := range kernels() {
		t.Run(kr.name, func(t *testing.T) {
			defer func(k *kernel) { active = k }(active)
			active = kr
			testSgemmRows(t)
		})
	}
}

func testSgemmRows(t *testing.T) {
	cases := []struct {
		name    string
		m, n, k int
		taps    int // rows per run of consecutive offsets (a filter row's taps)
		jump    int // offset between runs
	}{
		{"lenet 9x9", 10, 1000, 81, 9, 36},
		{"lenet 5x5", 20, 136, 250, 5, 14},
		{"one", 1, 1, 1, 1, 1},
		{"edge rows and columns", 7, 33, 9, 3, 40},
		{"twelve rows", 12, 64, 27, 3, 70},
		{"thirteen rows, k blocks", 13, 95, 600, 3, 100},
		{"k one block and one", 25, 31, 257, 1, 31},
		{"n blocks", 6, 2*blockN + 17, 4, 2, 2*blockN + 20},
		{"rows past blockM", 200, 40, 18, 3, 50},
		{"k zero", 5, 20, 0, 1, 1},
	}
	r := rand.New(rand.NewSource(5))
	for _, c := range cases {
		for _, v := range []struct {
			wide  bool
			slack int
		}{{true, 5}, {false, 5}, {true, 64}, {false, 64}} {
			wide := v.wide
			name := fmt.Sprintf("%s slack %d", c.name, v.slack)
			if !wide {
				name += " (6-row kernel)"
			}
			t.Run(name, func(t *testing.T) {
				defer func(w bool) { useWide = w }(useWide)
				useWide = wide
				lda, ldc := c.k+2, c.n+3
				boff := make([]int, c.k)
				for l := range boff {
					boff[l] = (l/c.taps)*c.jump + l%c.taps
				}
				bl := c.n
				if c.k > 0 {
					bl = boff[c.k-1] + c.n + v.slack
				}
				a := make([]float32, max(0, (c.m-1)*lda+c.k))
				b := make([]float32, bl)
				for _, s := range [][]float32{a, b} {
					for i := range s {
						s[i] = float32(r.NormFloat64())
					}
				}
				g := make([]float32, c.k*c.n) // the rows gathered
				for l, o := range boff {
					copy(g[l*c.n:(l+1)*c.n], b[o:o+c.n])
				}
				want := make([]float32, (c.m-1)*ldc+c.n)
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(math.NaN()) // written over, never read
					want[i] = got[i]
				}
				Sgemm(false, false, c.m, c.n, c.k, 1, a, lda, g, max(1, c.n), 0, want, ldc)
				if !SgemmRows(c.m, c.n, c.k, a, lda, b, boff, got, ldc) {
					t.Fatal("SgemmRows declined")
				}
				for i := range got {
					inside := i%ldc < c.n
					switch {
					case inside && math.Float32bits(got[i]) != math.Float32bits(want[i]):
						t.Fatalf("c[%d,%d] = %v, Sgemm over the gathered rows %v", i/ldc, i%ldc, got[i], want[i])
					case !inside && !math.IsNaN(float64(got[i])):
						t.Fatalf("c[%d] outside the m×n block changed to %v", i, got[i])
					}
				}
			})
		}
	}
	t.Run("row outside b", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic for a row of b past its end")
			}
		}()
		SgemmRows(1, 4, 2, make([]float32, 2), 2, make([]float32, 6), []int{0, 3}, make([]float32, 4), 4)
	})
}
