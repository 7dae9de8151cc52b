package wrap

import (
	"runtime"
	"testing"
	"weak"

	"gorgonia.org/tensor"
)

// TestDense checks that Dense hands out the same tensor again exactly for
// the same memory, length, element type and shape, a correct tensor in
// every case, and no allocation when it finds one.
func TestDense(t *testing.T) {
	buf := make([]float32, 24)
	other := make([]float32, 24)
	buf64 := make([]float64, 24)
	first := Dense([]int{2, 3, 4}, buf)
	for _, tc := range []struct {
		name string
		get  func() *tensor.Dense
		same bool
		want []int
	}{
		{"same memory and shape", func() *tensor.Dense { return Dense([]int{2, 3, 4}, buf) }, true, []int{2, 3, 4}},
		{"another shape", func() *tensor.Dense { return Dense([]int{6, 4}, buf) }, false, []int{6, 4}},
		{"a shorter length", func() *tensor.Dense { return Dense([]int{2, 3, 2}, buf[:12]) }, false, []int{2, 3, 2}},
		{"another buffer", func() *tensor.Dense { return Dense([]int{2, 3, 4}, other) }, false, []int{2, 3, 4}},
		{"an offset into the buffer", func() *tensor.Dense { return Dense([]int{2, 3, 2}, buf[12:]) }, false, []int{2, 3, 2}},
		{"float64", func() *tensor.Dense { return Dense([]int{2, 3, 4}, buf64) }, false, []int{2, 3, 4}},
		{"a scalar shape", func() *tensor.Dense { return Dense([]int{}, buf[:1]) }, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.get()
			if (d == first) != tc.same {
				t.Fatalf("same tensor as the first: %v, want %v", d == first, tc.same)
			}
			if len(tc.want) > 0 && !d.Shape().Eq(tensor.Shape(tc.want)) {
				t.Errorf("shape %v, want %v", d.Shape(), tc.want)
			}
			if !tc.same && len(tc.want) > 0 {
				if again := tc.get(); again != d {
					t.Errorf("a second call made another tensor")
				}
			}
		})
	}
	if n := testing.AllocsPerRun(10, func() { Dense([]int{2, 3, 4}, buf) }); n != 0 {
		t.Errorf("a cached tensor: %v allocations per call, want 0", n)
	}
	buf[5] = 7
	if got := first.Float32s()[5]; got != 7 {
		t.Errorf("the tensor reads %v, not its buffer's 7", got)
	}
	runtime.KeepAlive(first)
}

// TestDenseCollected checks that the cache keeps neither a tensor nor
// its memory alive: once nothing else refers to them, a collection frees
// both.
func TestDenseCollected(t *testing.T) {
	buf := make([]float32, 1<<16)
	mem := weak.Make(&buf[0])
	d := weak.Make(Dense([]int{1 << 16}, buf))
	buf = nil
	runtime.GC()
	runtime.GC()
	if d.Value() != nil {
		t.Errorf("the tensor of a dropped buffer survived a collection")
	}
	if mem.Value() != nil {
		t.Errorf("a dropped buffer survived a collection: the cache keeps its memory")
	}
}
