package job

import (
	"context"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
)

// lendsNot is a model that does not lend the loop its vectors
// (finetune.ScratchLender): the loop allocates them, and the model's pool
// holds the step's values alone.
type lendsNot struct{ *backend.Model }

func (lendsNot) Lends() bool { return false }

// TestLentTrajectoryUnchanged runs tune's loop (PNG with Adam held within
// its bound, validation every other step) on an MTAN whose four lent
// vectors do not fit in the pool's limit beside the step's values (width
// 8, 32×32: the pool's buffers of varied sizes carved out of the vectors
// between loans), once with the model lending its vectors and once not,
// and checks that every step's losses, criterion, learning rate and
// first-order changes ∇ℓ_iᵀΔθ, every validation's losses and the final
// parameters are the same bit for bit: no value of an evaluation shares
// memory with another live value or with a vector the loop holds.
func TestLentTrajectoryUnchanged(t *testing.T) {
	raw, err := proto.Marshal(models.MTAN(models.MTANConfig{Width: 8, InputHeight: 32, InputWidth: 32, Seed: 1}))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ParseTasks([]string{"seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"})
	if err != nil {
		t.Fatal(err)
	}
	train := &finetune.Dataset{Arrays: accumulateBatch(8, 32, 32)}
	val := &finetune.Dataset{Arrays: accumulateBatch(4, 32, 32)}
	type record struct {
		steps  []float64 // per step: F, LR, the losses and ∇ℓ_iᵀΔθ
		val    []float64
		params []float32
	}
	run := func(lend bool) record {
		m, err := importer.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		md, err := backend.Open(m, tasks, backend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var p finetune.Problem = md
		if !lend {
			p = lendsNot{md}
		}
		var r record
		rec := stepRecorder(func(st *finetune.Step) {
			r.steps = append(r.steps, st.F, st.LR)
			r.steps = append(r.steps, st.Points[0].Losses...)
			r.steps = append(r.steps, st.Points[0].DLoss...)
			r.val = append(r.val, st.Points[0].ValLosses...)
		})
		pn := png.PNG{}
		pn.Settings.ThresholdCap, pn.Settings.MaxTradeoff = png.RobustThresholdCap, png.RobustMaxTradeoff
		s := &finetune.Settings{Method: pn, Optimizer: "adam", LR: 1e-3, Steps: 6, BatchSize: 4, Seed: 1, ValEvery: 2}
		res, err := finetune.Run(context.Background(), p, train, val, s, rec)
		if err != nil {
			t.Fatal(err)
		}
		r.params = slices.Clone(res.Points[0].Params)
		return r
	}
	want, got := run(false), run(true)
	if len(got.steps) != len(want.steps) || len(got.val) != len(want.val) || len(want.val) == 0 {
		t.Fatalf("lending: %d step values, %d validation values; not lending: %d, %d (want some)", len(got.steps), len(got.val), len(want.steps), len(want.val))
	}
	for i := range want.steps {
		if math.Float64bits(got.steps[i]) != math.Float64bits(want.steps[i]) {
			t.Errorf("step value %d: %v lending, %v not", i, got.steps[i], want.steps[i])
		}
	}
	for i := range want.val {
		if math.Float64bits(got.val[i]) != math.Float64bits(want.val[i]) {
			t.Errorf("validation value %d: %v lending, %v not", i, got.val[i], want.val[i])
		}
	}
	for i := range want.params {
		if math.Float32bits(got.params[i]) != math.Float32bits(want.params[i]) {
			t.Fatalf("final θ[%d]: %v lending, %v not", i, got.params[i], want.params[i])
		}
	}
}
