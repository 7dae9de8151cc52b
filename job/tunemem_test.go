package job

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// liveHeap records the heap's live bytes, after a collection, at every
// step of a run.
type liveHeap struct{ max uint64 }

func (h *liveHeap) Init(*finetune.Config) error { return nil }
func (h *liveHeap) Record(*finetune.Step) error {
	h.max = max(h.max, heapAfterGC())
	return nil
}
func (h *liveHeap) Done(*finetune.Result) error { return nil }

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestTunePlanCoversHeap runs a whole tune of a narrow MTAN (width 16,
// 32×32: 2.8M parameters, 11 MB a vector, against small activations) with
// Adam and PNG's control on at every step (the most the loop holds), and
// checks the live heap its steps add to what Prepare left (measured after
// a collection at every step: bytes, not time) against what the plan
// counts for them: the step's activations, J and scratch, the loop's own
// vectors and the lent ones beyond the activations (MemoryPlan.loopBytes)
// and what the report pass adds to them. The plan leaves the programs the run compiles (the
// step's and the report pass's graphs) to its process term: 8 MiB is
// allowed for them, under one of the loop's vectors.
func TestTunePlanCoversHeap(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mtan.onnx")
	if err := models.WriteModel(model, models.MTAN(models.MTANConfig{Width: 16, InputHeight: 32, InputWidth: 32, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	const n, hw = 2, 32 * 32
	x, depth, normal := make([]float32, n*3*hw), make([]float32, n*hw), make([]float32, n*3*hw)
	seg := make([]int64, n*hw)
	for i := range x {
		x[i] = float32(i%13)/13 - 0.5
		normal[i] = float32(i%7)/7 - 0.4
	}
	for i := range seg {
		seg[i], depth[i] = int64(i%13), float32(i%5)
	}
	data := filepath.Join(dir, "d.npz")
	if err := npz.Write(data, map[string]*importer.Tensor{
		"x": importer.NewFloat32("x", []int{n, 3, 32, 32}, x), "seg": importer.NewInt64("seg", []int{n, 32, 32}, seg),
		"depth_t":  importer.NewFloat32("depth_t", []int{n, 1, 32, 32}, depth),
		"normal_t": importer.NewFloat32("normal_t", []int{n, 3, 32, 32}, normal)}); err != nil {
		t.Fatal(err)
	}
	cfg := TuneConfig{Model: model, Data: []string{data}, Criterion: "seg+depth+normal",
		Method: MethodConfig{Name: "png", Gamma: 1e-9}, Optimizer: "adam", LRSchedule: "constant", LR: 1e-5, Steps: 3, Batch: n,
		Out: filepath.Join(dir, "out.onnx"),
		ModelConfig: ModelConfig{Tasks: []string{"seg:nll:seg_logp:seg", "depth:depth_l1:depth:depth_t",
			"normal:normal_cos:normal:normal_t"}, BN: "frozen"}}
	j, err := cfg.Prepare(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &liveHeap{}
	j.Extra = append(j.Extra, h)
	before := heapAfterGC()
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := j.Memory
	planned := p.Step.Values + p.Step.Jacobian + p.Step.Scratch + p.loopBytes() + p.reportBytes()
	grew := int64(h.max) - int64(before)
	t.Logf("n = %d parameters; the steps added %d bytes to the live heap, the plan counts %d (activations %d, J %d, scratch %d, loop %d, lent %d, report %d)",
		j.Net.NumParams(), grew, planned, p.Step.Values, p.Step.Jacobian, p.Step.Scratch, p.loopBytes(), p.Lent, p.reportBytes())
	if grew > planned+8<<20 {
		t.Errorf("the steps added %d bytes to the live heap; the plan counts %d", grew, planned)
	}
	if p.Lent != TuneLentBytes(j.Net.NumParams()) || p.Extra < TuneLoopBytes(len(j.Tasks)+len(j.Terms), j.Net.NumParams()) {
		t.Errorf("the plan counts loop %d and lent %d bytes; the loop holds %d and borrows %d", p.Extra, p.Lent,
			TuneLoopBytes(len(j.Tasks)+len(j.Terms), j.Net.NumParams()), TuneLentBytes(j.Net.NumParams()))
	}
}
