package png

import "fmt"

// MultiDirection computes one direction per point of a multi-point
// problem (N models spread over the Pareto front): point k writes into
// dst[k] the direction method gives for its own task gradients Js[k], its
// own criterion gradient grads[k] (for the Riesz energy E(L_1..L_N), the
// caller sets grads[k].Coef = ∂E/∂L_k) and its own state states[k]. states
// may be nil (no history for any point); a nil method means PNG{}.
//
// The points are processed in order, each with the method's own
// parallelism. Mismatched list lengths are an error; the first failing
// point stops the loop and its error names the point (the Info of the
// points before it are returned).
func MultiDirection(dst [][]float32, Js []Jacobian, grads []Gradient, states []*State, method Method) ([]Info, error) {
	n := len(Js)
	if len(dst) != n || len(grads) != n || (states != nil && len(states) != n) {
		return nil, fmt.Errorf("png: MultiDirection: %d directions, %d Jacobians, %d gradients, %d states; want equal counts (states may be nil)",
			len(dst), n, len(grads), len(states))
	}
	if method == nil {
		method = PNG{}
	}
	infos := make([]Info, 0, n)
	for k := 0; k < n; k++ {
		var st *State
		if states != nil {
			st = states[k]
		}
		info, err := method.Direction(dst[k], Js[k], grads[k], st)
		if err != nil {
			return infos, fmt.Errorf("png: point %d: %w", k, err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}
