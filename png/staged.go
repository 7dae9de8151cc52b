package png

import "errors"

// Staged follows First for the first Steps directions of a run and Then
// afterwards: the paper's protocol for the complex-cosine criterion on
// ZDT2-variant, which takes MGD steps for the first 150 iterations so that
// PNG starts near the Pareto set (far from it the cosine criterion is flat
// in the losses it should descend). State.FirstSteps counts the steps First
// took; it travels with the rest of State, so a resumed run goes on where
// it stopped. Then's threshold average ē starts after the first stage.
type Staged struct {
	Steps       int
	First, Then Method
}

// Direction implements Method.
func (w Staged) Direction(dst []float32, J Jacobian, grad Gradient, st *State) (Info, error) {
	if w.First == nil || w.Then == nil {
		return Info{}, errors.New("png: Staged needs both First and Then")
	}
	if st.FirstSteps < w.Steps {
		info, err := w.First.Direction(dst, J, grad, st)
		if err == nil {
			st.FirstSteps++
		}
		return info, err
	}
	// Then may replace the whole State (PNG does): keep the count.
	n := st.FirstSteps
	info, err := w.Then.Direction(dst, J, grad, st)
	st.FirstSteps = n
	return info, err
}

// Constrain implements Constrainer through Then. The control is never on
// during the first stage (MGD and Linear do not turn it on), so Constrain is
// only asked afterwards; if Then is not a Constrainer the proposal is
// kept as it is.
func (w Staged) Constrain(dst []float32, J Jacobian, prop, metric, bound []float32, scale float64) (MetricInfo, error) {
	if c, ok := w.Then.(Constrainer); ok {
		return c.Constrain(dst, J, prop, metric, bound, scale)
	}
	copy(dst, prop)
	return MetricInfo{}, nil
}
