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

// plain reports whether the optimizer is plain SGD (θ ← θ − lr·v), whose
// update is the direction itself: PNG's guarantee on v holds for it as is.
func (s *Settings) plain() bool { return s.Optimizer != "adam" && s.Momentum == 0 }

// propose writes into prop the update u the optimizer would make, per unit
// learning rate (θ ← θ − lr·u), if handed the direction v, and returns its
// diagonal metric P in metric: handing it v + δ instead would propose
// u + P∘δ', where δ' is δ as its memory weighs the current gradient, so
// that the update closest to u in the norm ‖·‖_{P⁻¹} with every loss
// decreasing fast enough is u + P∘Jᵀλ (png.PNG.Constrain). st is not
// changed.
//
//   - momentum SGD (b ← μb + v, θ ← θ − lr·b): u = μb + v, P = I (metric
//     is left alone and false is returned);
//   - Adam: with m' = β1m + (1−β1)v and w' = β2w + (1−β2)v² (the moments
//     after this step, bias-corrected by c1 = 1−β1ᵗ and c2 = 1−β2ᵗ),
//     u = (m'/c1)/(√(w'/c2)+ε) and P = 1/(√(w'/c2)+ε): the metric of the
//     step Adam takes, its second moment held at what v gives it;
//   - plain SGD: u = v, P = I.
func (s *Settings) propose(prop, metric, v []float32, st OptState) bool {
	switch {
	case s.Optimizer == "adam":
		t := st.T + 1
		b1, b2 := s.Beta1, s.Beta2
		c1 := 1 - math.Pow(b1, float64(t))
		c2 := 1 - math.Pow(b2, float64(t))
		for i, g := range v {
			gi := float64(g)
			var m0, w0 float64
			if st.M != nil {
				m0, w0 = float64(st.M[i]), float64(st.V[i])
			}
			m := b1*m0 + (1-b1)*gi
			w := b2*w0 + (1-b2)*gi*gi
			d := math.Sqrt(w/c2) + s.Eps
			prop[i] = float32((m / c1) / d)
			metric[i] = float32(1 / d)
		}
		return true
	case s.Momentum != 0:
		for i, g := range v {
			var b float64
			if st.M != nil {
				b = float64(st.M[i])
			}
			prop[i] = float32(s.Momentum*b + float64(g))
		}
	default:
		copy(prop, v)
	}
	return false
}

// apply moves theta along the direction v with learning rate lr, updating
// the optimizer state st. Arithmetic is in float64, rounded to float32 once
// per element, so that it is deterministic.
//
// When u is not nil it is the update to make instead of the optimizer's
// own proposal for v (per unit learning rate, θ ← θ − lr·u; PNG's
// constrained update of propose's proposal), and st is updated as if the
// optimizer had been handed the gradient that makes it propose u: Adam's
// second moment takes v and its first moment becomes c1·u·(√(w'/c2)+ε);
// SGD's momentum buffer becomes u. Plain SGD moves by u.
func (s *Settings) apply(theta, v, u []float32, st *OptState, lr float64) {
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
			d := math.Sqrt(w/c2) + s.Eps
			step := (m / c1) / d
			if u != nil {
				step = float64(u[i])
				m = c1 * step * d
			}
			st.M[i], st.V[i] = float32(m), float32(w)
			theta[i] = float32(float64(theta[i]) - lr*step)
		}
	case s.Momentum != 0:
		if st.M == nil {
			st.M = make([]float32, len(theta))
		}
		st.T++
		for i, g := range v {
			b := s.Momentum*float64(st.M[i]) + float64(g)
			if u != nil {
				b = float64(u[i])
			}
			st.M[i] = float32(b)
			theta[i] = float32(float64(theta[i]) - lr*b)
		}
	default:
		st.T++
		if u != nil {
			v = u
		}
		for i, g := range v {
			theta[i] = float32(float64(theta[i]) - lr*float64(g))
		}
	}
}
