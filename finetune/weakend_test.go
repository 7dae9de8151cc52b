package finetune_test

import (
	"context"
	"math"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// weakEnd has ℓ_a = x² and ℓ_b = (x−1)² + y²: its Pareto front is
// (x², (x−1)²) for y = 0, x in [0, 1], and every point with x = 0 is
// Pareto-stationary (∇ℓ_a = 0) whatever ℓ_b = 1 + y² is: a weak-Pareto
// extension along which ℓ_b can rise without bound, as a task whose loss
// has reached zero lets the other rise.
type weakEnd struct{ theta []float32 }

func (w *weakEnd) Tasks() []string               { return []string{"a", "b"} }
func (w *weakEnd) NumParams() int                { return 2 }
func (w *weakEnd) Params(dst []float32)          { copy(dst, w.theta) }
func (w *weakEnd) SetParams(src []float32) error { copy(w.theta, src); return nil }
func (w *weakEnd) Evaluate(_ finetune.Batch, losses []float64, jac *png.Jacobian) error {
	x, y := float64(w.theta[0]), float64(w.theta[1])
	losses[0], losses[1] = x*x, (x-1)*(x-1)+y*y
	if jac != nil {
		jac.Row(0)[0], jac.Row(0)[1] = float32(2*x), 0
		jac.Row(1)[0], jac.Row(1)[1] = float32(2*(x-1)), float32(2*y)
	}
	return nil
}

// TestRunMultiWeakEnd: three models on weakEnd spread by the energy. The
// paper's PNG (no trade test) lets the models at the ℓ_a = 0 end walk off
// along the weak-Pareto extension (ℓ_b explodes: the toy reproduces how
// a LeNet2 front from scratch let a right loss rise to 25); with png.RobustMaxTradeoff every model stays on the
// front, for plain SGD, momentum and Adam.
func TestRunMultiWeakEnd(t *testing.T) {
	opts := []struct {
		name, opt string
		mom       float64
	}{{"sgd", "sgd", 0}, {"momentum", "sgd", 0.9}, {"adam", "adam", 0}}
	for _, o := range opts {
		for _, M := range []float64{0, png.RobustMaxTradeoff} {
			ps := []finetune.Problem{&weakEnd{[]float32{0.05, 0.01}}, &weakEnd{[]float32{0.5, 0.01}}, &weakEnd{[]float32{0.95, 0.01}}}
			E, err := criterion.NewEnergy([]string{"a", "b"}, 1e-4)
			if err != nil {
				t.Fatal(err)
			}
			s := finetune.Settings{Method: png.PNG{Settings: png.Settings{MaxTradeoff: M}}, Multi: E,
				Optimizer: o.opt, Momentum: o.mom, LR: 0.01, Steps: 3000, DivergeFactor: -1}
			var improper, held int
			count := recorderFunc(func(st *finetune.Step) error {
				for _, p := range st.Points {
					if p.Info.Improper {
						improper++
					}
					if p.Info.Held {
						held++
					}
				}
				return nil
			})
			res, err := finetune.RunMulti(context.Background(), ps, nil, nil, &s, count)
			if err != nil {
				t.Fatalf("%s, M = %g: %v", o.name, M, err)
			}
			if (M == 0) != (improper == 0) || held > improper {
				t.Errorf("%s, M = %g: %d improper and %d held model-steps; want improper ones only with the trade test, held among them", o.name, M, improper, held)
			}
			worst := 0.0
			for _, p := range res.Points {
				worst = math.Max(worst, math.Max(p.Losses[0], p.Losses[1]))
			}
			switch {
			case M == 0 && worst < 10:
				t.Errorf("%s, paper's PNG: largest loss %g; the toy should walk off (> 10)", o.name, worst)
			case M > 0 && worst > 1:
				t.Errorf("%s, M = %g: largest loss %g, want ≤ 1 (the front's range)", o.name, M, worst)
			}
		}
	}
}
