package cli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/job"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/models/datasets"
	"github.com/paretonav/paretonav/png"
)

// multiLeNet writes the two-headed LeNet (seed 1) and the first n pairs of
// MultiMNIST's training split (seed 0), as paretonav models lenet2 --seed 1
// and paretonav data multimnist --limit n write them.
func multiLeNet(t *testing.T, dir string, n int) (model, data string) {
	t.Helper()
	model, data = filepath.Join(dir, "lenet2.onnx"), filepath.Join(dir, "train.npz")
	if err := models.WriteModel(model, models.LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	arrays, err := datasets.Multi(datasets.MultiMNIST, datasets.Options{Split: datasets.Train, Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := npz.Write(data, arrays); err != nil {
		t.Fatal(err)
	}
	return model, data
}

// stepWatch is the tuned model, recording how far every update moves a
// parameter: SetParams is called once per step with the updated θ (and on
// a rollback, which these runs must not need).
type stepWatch struct {
	*backend.Model
	prev    []float32
	moves   []float64 // max_i |Δθ_i| of every SetParams
	theta0  []float32
	maxDist float64 // ‖θ − θ₀‖² at its largest over the steps
}

// Theta shares no vector (finetune.SharedParams), so that the loop keeps
// its own θ and hands every update to SetParams.
func (w *stepWatch) Theta() []float32 { return nil }

func (w *stepWatch) SetParams(src []float32) error {
	if w.theta0 == nil {
		w.theta0 = make([]float32, len(src))
		w.Params(w.theta0)
	}
	if w.prev == nil {
		w.prev = append([]float32(nil), w.theta0...)
	}
	var move float64
	for i, x := range src {
		move = math.Max(move, math.Abs(float64(x)-float64(w.prev[i])))
	}
	w.moves = append(w.moves, move)
	w.maxDist = math.Max(w.maxDist, png.Drift(src, w.theta0))
	copy(w.prev, src)
	return w.Model.SetParams(src)
}

// driftRun tunes the two-headed LeNet on 8 examples for 30 steps with
// tune's settings (PNG with its trade test and threshold cap) and returns
// the watch and the final ‖θ − θ₀‖².
func driftRun(t *testing.T, model, data, crit, opt string, lr, gamma float64) (*stepWatch, float64, *finetune.Settings) {
	t.Helper()
	cfg := &job.TuneConfig{Model: model, Data: []string{data},
		ModelConfig: job.ModelConfig{Tasks: []string{"left:nll:logp_left:left", "right:nll:logp_right:right"}, BN: "frozen"},
		Criterion:   crit, Method: job.MethodConfig{Name: "png", Gamma: gamma}, Optimizer: opt, LR: lr,
		Steps: 30, Batch: 8, Seed: 1, Out: filepath.Join(t.TempDir(), "out.onnx")}
	j, err := cfg.Prepare(nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &stepWatch{Model: j.Net}
	res, err := finetune.Run(context.Background(), w, j.Train, nil, j.Settings, nil)
	if err != nil {
		t.Fatalf("%s %s lr %g: %v", crit, opt, lr, err)
	}
	if len(w.moves) != res.Steps {
		t.Fatalf("%s %s lr %g: %d parameter updates in %d steps: a rollback", crit, opt, lr, len(w.moves), res.Steps)
	}
	return w, png.Drift(res.Points[0].Params, w.theta0), j.Settings
}

// TestHeavyDriftStaysNear: a criterion that weighs the drift ‖θ − θ₀‖²
// heavily keeps the weights nearer their start than plain tuning
// (left+right), with Adam and with SGD, and Adam never moves a weight by
// more than its own step bound lr·B_t (finetune.AdamStepBound), the
// control on or off. The constrained update once ignored that bound
// (single weights moved by hundreds of Adam steps; ‖θ − θ₀‖² ended above
// plain tuning's), and SGD's explicit step on 1000·drift at lr 0.01
// multiplied θ − θ₀ by −19 per step until the losses diverged.
func TestHeavyDriftStaysNear(t *testing.T) {
	model, data := multiLeNet(t, t.TempDir(), 8)
	for _, tc := range []struct {
		opt   string
		lr    float64
		gamma float64 // 0: tune's default; 1e9: the control off but for the trade test
	}{
		{"adam", 0.01, 0},
		{"adam", 0.001, 0},
		{"adam", 0.01, 1e9},
		{"sgd", 0.01, 0},
	} {
		t.Run(fmt.Sprintf("%s/lr=%g/gamma=%g", tc.opt, tc.lr, tc.gamma), func(t *testing.T) {
			plain, dPlain, _ := driftRun(t, model, data, "left+right", tc.opt, tc.lr, tc.gamma)
			heavy, dHeavy, s := driftRun(t, model, data, "left+right+1000*drift", tc.opt, tc.lr, tc.gamma)
			t.Logf("‖θ−θ₀‖² after 30 steps: %.4g for left+right, %.4g for +1000·drift (largest on the way %.4g)", dPlain, dHeavy, heavy.maxDist)
			if !(dHeavy < dPlain/10) || !(heavy.maxDist < dPlain) {
				t.Errorf("1000·drift: ‖θ−θ₀‖² ends at %.4g (at most %.4g on the way), left+right at %.4g: want the weighted drift to keep the weights far nearer",
					dHeavy, heavy.maxDist, dPlain)
			}
			if tc.opt != "adam" {
				return
			}
			b1, b2 := s.Beta1, s.Beta2
			if b1 == 0 {
				b1 = finetune.DefaultBeta1
			}
			if b2 == 0 {
				b2 = finetune.DefaultBeta2
			}
			for name, w := range map[string]*stepWatch{"left+right": plain, "left+right+1000*drift": heavy} {
				for k, move := range w.moves {
					// float32 rounding of θ (|θ| < 4 here) adds up to 2⁻²¹.
					bound := tc.lr*finetune.AdamStepBound(b1, b2, k+1)*(1+1e-6) + 0x1p-21
					if !(move <= bound) {
						t.Errorf("%s: step %d moves a weight by %.4g, Adam's bound lr·B_%d is %.4g", name, k+1, move, k+1, bound)
						break
					}
				}
			}
		})
	}
}
