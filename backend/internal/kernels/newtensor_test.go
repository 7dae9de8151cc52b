package kernels

import (
	"testing"

	"gorgonia.org/tensor"
)

// TestNewTensorOwnsShape checks that newTensor's tensor keeps its shape
// when the caller's shape slice changes afterwards (tensor.WithShape
// copies it; newTensor no longer clones it first).
func TestNewTensorOwnsShape(t *testing.T) {
	for _, s := range []tensor.Shape{{6}, {2, 3}, {1, 2, 3}, {2, 1, 3, 1}} {
		want := s.Clone()
		got := newTensor(s, make([]float32, s.TotalSize()))
		for i := range s {
			s[i] = 7
		}
		if !got.Shape().Eq(want) {
			t.Errorf("shape %v: the tensor's shape became %v after the caller's slice changed", want, got.Shape())
		}
	}
}

// TestDataNoBoxing checks that data gives a dense tensor's own elements
// (the same backing array as Data()) for float32, float64 and int64,
// an empty tensor included, without allocating.
func TestDataNoBoxing(t *testing.T) {
	f32 := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6}))
	f64 := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
	i64 := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]int64{1, 2, 3, 4}))
	empty := tensor.New(tensor.WithShape(0, 3), tensor.WithBacking([]float32{}))
	cases := []struct {
		name string
		get  func() (got, want any, same bool)
	}{
		{"float32", func() (any, any, bool) {
			g, w := data[float32](f32), f32.Data().([]float32)
			return g, w, len(g) == len(w) && &g[0] == &w[0]
		}},
		{"float64", func() (any, any, bool) {
			g, w := data[float64](f64), f64.Data().([]float64)
			return g, w, len(g) == len(w) && &g[0] == &w[0]
		}},
		{"int64", func() (any, any, bool) {
			g, w := data[int64](i64), i64.Data().([]int64)
			return g, w, len(g) == len(w) && &g[0] == &w[0]
		}},
		{"empty", func() (any, any, bool) {
			g := data[float32](empty)
			return g, []float32{}, len(g) == 0
		}},
	}
	for _, c := range cases {
		if got, want, same := c.get(); !same {
			t.Errorf("%s: data gave %v, Data() %v: not the same elements", c.name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = data[float32](f32) }); n != 0 {
		t.Errorf("data[float32] allocated %v times per call, want 0", n)
	}
}
