package png

import "fmt"

// MGD is the multiple-gradient descent baseline (Désidéri 2012): v = Jᵀω*
// with ω* the min-norm point of the convex hull of the task gradients, the
// direction that decreases all losses fastest in the worst case. It ignores
// the criterion's gradient and the State (which may be nil).
type MGD struct {
	// Workers is the number of goroutines of the passes over J; zero means
	// runtime.NumCPU().
	Workers int
}

// Direction writes v = Jᵀω* into dst and fills Info.G, Info.Omega and
// Info.VNorm (Lambda stays nil, the control off). It reads J twice and
// panics when the shapes of dst and J do not agree.
func (d MGD) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	checkShapes(dst, J, Gradient{})
	K, err := gramChecked(J, d.Workers)
	if err != nil {
		return Info{}, err
	}
	omega, g := MinNorm(K, J.M)
	info := Info{G: g, Omega: omega}
	info.VNorm = combine(dst, J, omega, nil, d.Workers)
	return info, finishNorm(info.VNorm)
}

// Linear is linear scalarization: v = Jᵀw = Σ w_i ∇ℓ_i for fixed weights.
// It ignores the criterion's gradient and the State (which may be nil).
type Linear struct {
	// Weights are the m task weights; nil means 1/m each.
	Weights []float64
	// Workers is the number of goroutines of the passes over J; zero means
	// runtime.NumCPU().
	Workers int
}

// Direction writes v = Jᵀw into dst and fills Info.G and Info.Omega (the
// min-norm point, for comparison with PNG and MGD; this costs the Gram
// pass) and Info.VNorm. Weights of the wrong length or non-finite weights
// are an error; mismatched dst and J panic.
func (l Linear) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	checkShapes(dst, J, Gradient{})
	m := J.M
	w := l.Weights
	if w == nil && m > 0 {
		w = make([]float64, m)
		for i := range w {
			w[i] = 1 / float64(m)
		}
	}
	if len(w) != m {
		return Info{}, fmt.Errorf("png: Linear has %d weights for %d tasks", len(w), m)
	}
	for i, v := range w {
		if !isFinite(v) {
			return Info{}, fmt.Errorf("png: Linear.Weights[%d] = %v, want a finite number", i, v)
		}
	}
	K, err := gramChecked(J, l.Workers)
	if err != nil {
		return Info{}, err
	}
	omega, g := MinNorm(K, m)
	info := Info{G: g, Omega: omega}
	info.VNorm = combine(dst, J, w, nil, l.Workers)
	return info, finishNorm(info.VNorm)
}

// gramChecked returns K = J Jᵀ, or an error for m = 0, negative workers or
// non-finite gradients.
func gramChecked(J Jacobian, workers int) ([]float64, error) {
	if J.M == 0 {
		return nil, errNoTasks
	}
	if workers < 0 {
		return nil, fmt.Errorf("png: Workers = %d, want ≥ 0 (0 = all CPUs)", workers)
	}
	K := make([]float64, J.M*J.M)
	gramPass(K, nil, J, nil, workers)
	return K, checkFinite(K, nil, nil, J.M)
}
