package finetune

import "math"

// OptState is an optimizer's memory for one parameter vector: SGD's
// momentum buffer in M, Adam's first and second moments in M and V, and
// the number of updates T. It is part of a checkpoint.
type OptState struct {
	M, V []float32
	T    int
}

func (o OptState) clone() OptState {
	return OptState{M: append([]float32(nil), o.M...), V: append([]float32(nil), o.V...), T: o.T}
}

// apply moves theta along the direction v with learning rate lr, updating
// the optimizer state st. Arithmetic is in float64, rounded to float32 once
// per element, so that it is deterministic.
func (s *Settings) apply(theta, v []float32, st *OptState, lr float64) {
	switch {
	case s.Optimizer == "adam":
		if st.M == nil {
			st.M = make([]float32, len(theta))
			st.V = make([]float32, len(theta))
		}
		st.T++
		b1, b2 := s.Beta1, s.Beta2
		c1 := 1 - math.Pow(b1, float64(st.T))
		c2 := 1 - math.Pow(b2, float64(st.T))
		for i, g := range v {
			gi := float64(g)
			m := b1*float64(st.M[i]) + (1-b1)*gi
			w := b2*float64(st.V[i]) + (1-b2)*gi*gi
			st.M[i], st.V[i] = float32(m), float32(w)
			theta[i] = float32(float64(theta[i]) - lr*(m/c1)/(math.Sqrt(w/c2)+s.Eps))
		}
	case s.Momentum != 0:
		if st.M == nil {
			st.M = make([]float32, len(theta))
		}
		st.T++
		for i, g := range v {
			b := s.Momentum*float64(st.M[i]) + float64(g)
			st.M[i] = float32(b)
			theta[i] = float32(float64(theta[i]) - lr*b)
		}
	default:
		st.T++
		for i, g := range v {
			theta[i] = float32(float64(theta[i]) - lr*float64(g))
		}
	}
}
