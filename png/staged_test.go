package png

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStaged checks that Staged gives First's direction for exactly
// Steps calls, counts them in State.FirstSteps (so that a resumed state
// goes on in the right stage), then gives Then's, with Then's threshold
// average starting only after the first stage.
func TestStaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const m, n, steps = 3, 40, 4
	J := randJacobian(rng, m, n)
	grad := Gradient{Coef: []float64{1, 0.5, 0.2}}
	s := Staged{Steps: steps, First: MGD{}, Then: PNG{}}
	var st State
	got, want := make([]float32, n), make([]float32, n)
	for call := 1; call <= steps+2; call++ {
		info, err := s.Direction(got, J, grad, &st)
		if err != nil {
			t.Fatal(err)
		}
		var ref Method = PNG{}
		var refSt State
		if call <= steps {
			ref = MGD{}
		} else {
			refSt = State{}
			for range call - steps - 1 { // Then's state: only the steps after the first stage
				if _, err := (PNG{}).Direction(want, J, grad, &refSt); err != nil {
					t.Fatal(err)
				}
			}
		}
		refInfo, err := ref.Direction(want, J, grad, &refSt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || info.G != refInfo.G || info.ControlOn != refInfo.ControlOn {
			t.Errorf("call %d: direction or info differs from %T's", call, ref)
		}
		if wantFirst := min(call, steps); st.FirstSteps != wantFirst {
			t.Errorf("call %d: FirstSteps = %d, want %d", call, st.FirstSteps, wantFirst)
		}
		if call > steps && (st.Weight != refSt.Weight || st.AvgSqNorm != refSt.AvgSqNorm) {
			t.Errorf("call %d: threshold average %v/%v, want %v/%v (Then's own steps only)", call, st.AvgSqNorm, st.Weight, refSt.AvgSqNorm, refSt.Weight)
		}
	}
	if _, err := (Staged{Steps: 1, Then: PNG{}}).Direction(got, J, grad, &State{}); err == nil {
		t.Error("Staged without First: no error")
	}
	// Constrain goes to Then when it is a Constrainer, else keeps the proposal.
	prop := randVec32(rng, n)
	dst := make([]float32, n)
	if _, err := (Staged{Steps: 1, First: MGD{}, Then: MGD{}}).Constrain(dst, J, prop, nil, nil, 1); err != nil || !slices.Equal(dst, prop) {
		t.Errorf("Constrain with a Then that is no Constrainer: %v, changed the proposal", err)
	}
	ref := make([]float32, n)
	_, err1 := (Staged{Steps: 1, First: MGD{}, Then: PNG{}}).Constrain(dst, J, prop, nil, nil, 1)
	_, err2 := PNG{}.Constrain(ref, J, prop, nil, nil, 1)
	if err1 != nil || err2 != nil || !slices.Equal(dst, ref) {
		t.Errorf("Constrain through PNG: %v, %v, or a different update", err1, err2)
	}
}
