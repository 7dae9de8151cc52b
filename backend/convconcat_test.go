package backend

import (
	"math"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/png"
)

// TestFuseConcatConv checks that the small MTAN fixture's pointwise
// convolutions of channel Concats run fused (ops.ConvConcat, the Concats
// then not formed) and that its losses and J agree with the unfused
// program's to float32 round-off: the fused product sums each part's
// channels apart, then adds them.
func TestFuseConcatConv(t *testing.T) {
	defer func(v bool) { FuseConcatConv = v }(FuseConcatConv)
	var sc stepCase
	for _, c := range stepCases {
		if c.name == "mtan_small" {
			sc = c
		}
	}
	run := func(fuse bool) ([]float64, []float32, int, int) {
		FuseConcatConv = fuse
		md := openStepCase(t, sc)
		m := len(sc.tasks)
		losses := make([]float64, m)
		jac := png.NewJacobian(m, md.NumParams())
		if err := md.Evaluate(sc.batch(4), losses, &jac); err != nil {
			t.Fatal(err)
		}
		fused, concats := 0, 0
		for _, c := range md.cache {
			if c == nil || c.prog == nil {
				continue
			}
			for _, n := range c.prog.nodes {
				if n.Op() == nil {
					continue
				}
				s := n.Op().String()
				fused += b2i(strings.HasPrefix(s, "ConvConcat{"))
				concats += b2i(strings.HasPrefix(s, "Concat["))
			}
		}
		return losses, jac.Data, fused, concats
	}
	l0, j0, f0, c0 := run(false)
	l1, j1, f1, c1 := run(true)
	if f0 != 0 || c0 == 0 {
		t.Fatalf("unfused: %d fused nodes, %d Concats", f0, c0)
	}
	if f1 == 0 || c1 != 0 {
		t.Fatalf("fused: %d fused nodes, %d Concats left (the fixture's Concats all feed pointwise convolutions)", f1, c1)
	}
	for k := range l0 {
		if math.Abs(l1[k]-l0[k]) > 1e-5*math.Max(1, math.Abs(l0[k])) {
			t.Errorf("loss %d: fused %v, unfused %v", k, l1[k], l0[k])
		}
	}
	worst, scale := 0.0, 0.0
	for i := range j0 {
		worst = max(worst, math.Abs(float64(j1[i]-j0[i])))
		scale = max(scale, math.Abs(float64(j0[i])))
	}
	if worst > 1e-4*scale {
		t.Errorf("J: fused and unfused differ by %g (largest entry %g)", worst, scale)
	}
	t.Logf("%d of the fixture's pointwise convolutions fused; J differs by at most %g (largest entry %g)", f1, worst, scale)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
