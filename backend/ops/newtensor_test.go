package ops

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
