package png

import "fmt"

// MultiDirection computes one direction per point of a multi-point
// problem (N models spread over the Pareto front): point k writes into
// dst[k] the direction method gives for its own task gradients Js[k], its
// own criterion gradient grads[k] (for the Riesz energy E(L_1..L_N), the
// caller sets grads[k].Coef = ∂E/∂L_k) and its own state states[k]. states
// may be nil (no history for any point); a nil method means PNG{}; a
// PerPoint method gives point k its own method (one per point, else an
// error).
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
	per, isPer := method.(PerPoint)
	if isPer && len(per) != n {
		return nil, fmt.Errorf("png: MultiDirection: %d methods for %d points; want one per point", len(per), n)
	}
	infos := make([]Info, 0, n)
	for k := 0; k < n; k++ {
		var st *State
		if states != nil {
			st = states[k]
		}
		mk := method
		if isPer {
			mk = per[k]
		}
		info, err := mk.Direction(dst[k], Js[k], grads[k], st)
		if err != nil {
			return infos, fmt.Errorf("png: point %d: %w", k, err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// PerPoint is a Method for multi-point problems with a method of its own
// for every point: MultiDirection gives point k the direction of
// PerPoint[k] (EPO with one preference ray per model, linear
// scalarization with one weight vector per model).
type PerPoint []Method

// Direction is the direction of the only method of a one-point PerPoint;
// with several methods a single direction is ambiguous and an error
// (use MultiDirection).
func (p PerPoint) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	if len(p) != 1 {
		return Info{}, fmt.Errorf("png: PerPoint with %d methods asked for one direction; want MultiDirection with one point per method", len(p))
	}
	return p[0].Direction(dst, J, grad, st)
}
