package png

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMGD(t *testing.T) {
	for _, c := range pngCases(11) {
		v := make([]float32, c.J.N)
		info, err := MGD{Workers: 2}.Direction(v, c.J, c.grad, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		K, _ := naiveGram(c.J, nil)
		omega, g := MinNorm(K, c.J.M)
		if math.Abs(info.G-g) > 1e-12*scaleOf(K, c.J.M) || info.ControlOn || info.Lambda != nil {
			t.Errorf("%s: Info = %+v, want G = %v, control off, no λ", c.name, info, g)
		}
		// v = Jᵀω*, so ‖v‖² = g and every ∇ℓ_iᵀv ≥ g (MGD's guarantee).
		want := gradOf(c.J, Gradient{Coef: omega})
		for k := range want {
			if math.Abs(float64(v[k])-want[k]) > vRelTol*math.Sqrt(g) {
				t.Fatalf("%s: v[%d] = %v, want %v", c.name, k, v[k], want[k])
			}
		}
		dots, norms := jv(c.J, v)
		for i := range dots {
			if dots[i] < g-vRelTol*norms[i]*info.VNorm {
				t.Errorf("%s: ∇ℓ_%dᵀv = %v < g = %v", c.name, i, dots[i], g)
			}
		}
		if math.Abs(info.VNorm*info.VNorm-g) > 1e-6*g {
			t.Errorf("%s: ‖v‖² = %v, want g = %v", c.name, info.VNorm*info.VNorm, g)
		}
	}
}

func TestLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for _, c := range pngCases(12) {
		m := c.J.M
		w := make([]float64, m)
		for i := range w {
			w[i] = rng.Float64()
		}
		uniform := make([]float64, m)
		for i := range uniform {
			uniform[i] = 1 / float64(m)
		}
		tests := []struct {
			name    string
			weights []float64
			want    []float64
		}{
			{"weights", w, w},
			{"nil weights", nil, uniform},
		}
		for _, tt := range tests {
			v := make([]float32, c.J.N)
			info, err := Linear{Weights: tt.weights}.Direction(v, c.J, c.grad, nil)
			if err != nil {
				t.Fatalf("%s/%s: %v", c.name, tt.name, err)
			}
			want := gradOf(c.J, Gradient{Coef: tt.want})
			if d := unitDist(v, want); d > limitTol {
				t.Errorf("%s/%s: v differs from Jᵀw by %g", c.name, tt.name, d)
			}
			if math.Abs(info.VNorm-norm32(v)) > 1e-12*info.VNorm {
				t.Errorf("%s/%s: VNorm = %v, ‖v‖ = %v", c.name, tt.name, info.VNorm, norm32(v))
			}
			K, _ := naiveGram(c.J, nil)
			_, g := MinNorm(K, m)
			if math.Abs(info.G-g) > 1e-12*scaleOf(K, m) || len(info.Omega) != m {
				t.Errorf("%s/%s: G = %v, Omega = %v; want G = %v", c.name, tt.name, info.G, info.Omega, g)
			}
		}
	}
}

func TestMultiDirection(t *testing.T) {
	cs := pngCases(13)[:3] // m = 1 with three gradient kinds
	cs = append(cs, pngCases(14)[3:6]...)
	dst := make([][]float32, len(cs))
	Js := make([]Jacobian, len(cs))
	grads := make([]Gradient, len(cs))
	states := make([]*State, len(cs))
	for k, c := range cs {
		dst[k] = make([]float32, c.J.N)
		Js[k], grads[k], states[k] = c.J, c.grad, &State{}
	}
	method := PNG{Settings{Gamma: 1e-9, Workers: 1}}
	infos, err := MultiDirection(dst, Js, grads, states, method)
	if err != nil || len(infos) != len(cs) {
		t.Fatalf("MultiDirection: %d infos, err %v", len(infos), err)
	}
	for k, c := range cs {
		v := make([]float32, c.J.N)
		want, err := method.Direction(v, c.J, c.grad, &State{})
		if err != nil {
			t.Fatal(err)
		}
		if infos[k].G != want.G || infos[k].Phi != want.Phi || states[k].Steps != 1 {
			t.Errorf("point %d: Info %+v, state %+v; want %+v after one step", k, infos[k], *states[k], want)
		}
		for i := range v {
			if v[i] != dst[k][i] {
				t.Fatalf("point %d: v[%d] = %v, single-point Direction gives %v", k, i, dst[k][i], v[i])
			}
		}
	}

	// Nil states and a nil method (PNG{}) work too.
	if _, err := MultiDirection(dst, Js, grads, nil, nil); err != nil {
		t.Errorf("nil states and method: %v", err)
	}
}

func TestMultiDirectionErrors(t *testing.T) {
	J := NewJacobian(2, 3)
	bad := NewJacobian(2, 3)
	bad.Data[0] = float32(math.Inf(1))
	tests := []struct {
		name   string
		dst    [][]float32
		Js     []Jacobian
		grads  []Gradient
		states []*State
		want   string // text the error must contain
	}{
		{"fewer gradients", [][]float32{make([]float32, 3)}, []Jacobian{J}, nil, nil, "1 Jacobians, 0 gradients"},
		{"fewer states", [][]float32{make([]float32, 3)}, []Jacobian{J}, []Gradient{{}}, []*State{}, "0 states"},
		{"point 1 not finite", [][]float32{make([]float32, 3), make([]float32, 3)}, []Jacobian{J, bad}, []Gradient{{}, {}}, nil, "point 1"},
	}
	for _, tt := range tests {
		_, err := MultiDirection(tt.dst, tt.Js, tt.grads, tt.states, PNG{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

// TestPerPoint: MultiDirection gives each point its own method's direction.
func TestPerPoint(t *testing.T) {
	J := NewJacobian(2, 2)
	copy(J.Data, []float32{1, 0.2, 0.3, 1})
	losses := []float64{0.8, 0.2}
	per := PerPoint{EPO{Preference: []float64{1, 4}}, Linear{Weights: []float64{0.25, 0.75}}, EPO{}}
	dst := [][]float32{make([]float32, 2), make([]float32, 2), make([]float32, 2)}
	grads := []Gradient{{Losses: losses}, {Losses: losses}, {Losses: losses}}
	infos, err := MultiDirection(dst, []Jacobian{J, J, J}, grads, nil, per)
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range per {
		v := make([]float32, 2)
		want, err := m.Direction(v, J, grads[k], nil)
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != dst[k][0] || v[1] != dst[k][1] || infos[k].Mode != want.Mode {
			t.Errorf("point %d: v = %v (mode %q), its own method gives %v (mode %q)", k, dst[k], infos[k].Mode, v, want.Mode)
		}
	}
	if dst[0][0] == dst[2][0] && dst[0][1] == dst[2][1] {
		t.Errorf("EPO with preferences (1,4) and (1,1) gave the same direction %v", dst[0])
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"count", func() error {
			_, err := MultiDirection(dst[:2], []Jacobian{J, J}, grads[:2], nil, per)
			return err
		}, "3 methods for 2 points"},
		{"single", func() error {
			_, err := per.Direction(dst[0], J, grads[0], nil)
			return err
		}, "PerPoint with 3 methods"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
