package gemm

import (
	"fmt"
	"testing"
)

// TestKernelsFlushSubnormals checks that every micro-kernel this CPU runs,
// on each of Sgemm's paths (packed, B read in place, dot products), treats
// subnormal inputs as zero and flushes subnormal results to zero, where
// exact arithmetic gives a normal sum of k subnormal terms; and that the
// caller's floating-point mode is back after the call (Go code still makes
// subnormals).
func TestKernelsFlushSubnormals(t *testing.T) {
	const k = 256 // k·1e-39 and k·1e-40 are normal (above 1.18e-38)
	cases := []struct {
		name   string
		tB     bool
		m, n   int
		sa, sb float32
	}{
		{"packed/subnormal-in", false, 70, 40, 1e-39, 1},
		{"packed/subnormal-product", false, 70, 40, 1e-20, 1e-20},
		{"inplace-a/subnormal-in", false, 72, 40, 1e-39, 1},
		{"inplace-a/subnormal-product", false, 72, 40, 1e-20, 1e-20},
		{"direct/subnormal-in", false, 12, 40, 1, 1e-39},
		{"direct/subnormal-product", false, 12, 40, 1e-20, 1e-20},
		{"dot/subnormal-in", true, 9, 8, 1e-39, 1},
		{"dot/subnormal-product", true, 9, 8, 1e-20, 1e-20},
	}
	ks := kernels()
	if len(ks) == 0 {
		t.Skip("no assembly kernels on this CPU: the fallback (gonum) keeps IEEE subnormals")
	}
	for _, kr := range ks {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", kr.name, c.name), func(t *testing.T) {
				saved := active
				active = kr
				defer func() { active = saved }()
				a := make([]float32, c.m*k)
				b := make([]float32, k*c.n)
				for i := range a {
					a[i] = c.sa
				}
				for i := range b {
					b[i] = c.sb
				}
				cc := make([]float32, c.m*c.n)
				ldb := c.n
				if c.tB {
					ldb = k
				}
				Sgemm(false, c.tB, c.m, c.n, k, 1, a, k, b, ldb, 0, cc, c.n)
				exact := float64(k) * float64(c.sa) * float64(c.sb)
				for i, v := range cc {
					if v != 0 {
						t.Fatalf("c[%d] = %g, want 0 (flushed; exact %g)", i, v, exact)
					}
				}
				// the caller's mode is restored: Go's own arithmetic keeps subnormals
				if got := a[0] * b[0]; got == 0 {
					t.Fatalf("after the kernel, %g·%g = 0 in Go code: MXCSR not restored", a[0], b[0])
				}
			})
		}
	}
}
