package png

import (
	"math"
	"testing"
)

func TestDriftAndOutsideSpan(t *testing.T) {
	theta := []float32{1, -2, 0.5}
	theta0 := []float32{0, -1, 0.5}
	if got := Drift(theta, theta0); got != 2 {
		t.Errorf("Drift = %v, want ‖(1, −1, 0)‖² = 2", got)
	}
	T := Jacobian{M: 2, N: 3, Data: []float32{1, 2, 3, -1, 0, 4}}
	tests := []struct {
		name   string
		c      []float64
		cd     float64
		theta0 []float32
		want   []float32 // nil: all coefficients zero, dst untouched
	}{
		{"terms", []float64{2, 0.5}, 0, nil, []float32{1.5, 4, 8}},
		{"drift", []float64{0, 0}, 3, theta0, []float32{6, -6, 0}},
		{"both", []float64{0, 1}, 0.5, theta0, []float32{0, -1, 4}},
		{"drift without θ₀", []float64{0, 0}, 3, nil, nil},
		{"zero", []float64{0, 0}, 0, theta0, nil},
	}
	for _, tt := range tests {
		dst := []float32{7, 7, 7}
		ok := OutsideSpan(dst, T, tt.c, tt.cd, theta, tt.theta0)
		if ok != (tt.want != nil) {
			t.Errorf("%s: OutsideSpan = %v, want %v", tt.name, ok, tt.want != nil)
		}
		want := tt.want
		if want == nil {
			want = []float32{7, 7, 7}
		}
		for j := range want {
			if math.Abs(float64(dst[j]-want[j])) > 1e-6 {
				t.Errorf("%s: dst = %v, want %v", tt.name, dst, want)
				break
			}
		}
	}
	// No terms at all: the drift part alone.
	dst := make([]float32, 3)
	if !OutsideSpan(dst, Jacobian{}, nil, 1, theta, theta0) || dst[0] != 2 || dst[1] != -2 || dst[2] != 0 {
		t.Errorf("drift alone: %v, want [2 -2 0]", dst)
	}
}

func TestOutsideSpanPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"short coefficients": func() { OutsideSpan(make([]float32, 3), NewJacobian(2, 3), []float64{1}, 0, nil, nil) },
		"wide terms":         func() { OutsideSpan(make([]float32, 3), NewJacobian(1, 4), []float64{1}, 0, nil, nil) },
		"short θ₀":           func() { OutsideSpan(make([]float32, 3), Jacobian{}, nil, 1, make([]float32, 3), make([]float32, 2)) },
		"Drift lengths":      func() { Drift(make([]float32, 3), make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
