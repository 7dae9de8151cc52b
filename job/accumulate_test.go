package job

import (
	"math"
	"math/rand"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
)

// accumulateBatch is an NYUv2-shaped batch of n examples whose targets
// make the losses' element counts differ between examples: ignored labels
// (-1), zero depths and zero normals, more of them in later examples.
func accumulateBatch(n, h, w int) finetune.Batch {
	r := rand.New(rand.NewSource(5))
	x := make([]float32, n*3*h*w)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	seg := make([]int64, n*h*w)
	depth := make([]float32, n*h*w)
	nrm := make([]float32, n*3*h*w)
	for i := 0; i < n; i++ {
		hole := 0.1 + 0.1*float64(i) // share of invalid pixels grows with i
		for p := 0; p < h*w; p++ {
			j := i*h*w + p
			seg[j] = int64(r.Intn(13))
			if r.Float64() < hole {
				seg[j] = -1
			}
			if r.Float64() >= hole {
				depth[j] = float32(0.5 + r.Float64())
			}
			if r.Float64() >= hole {
				for c := 0; c < 3; c++ {
					nrm[(i*3+c)*h*w+p] = float32(r.NormFloat64())
				}
			}
		}
	}
	return finetune.Batch{
		"x":        importer.NewFloat32("x", []int{n, 3, h, w}, x),
		"seg":      &importer.Tensor{Name: "seg", Type: importer.Int64, Shape: []int{n, h, w}, I64: seg},
		"depth_t":  importer.NewFloat32("depth_t", []int{n, 1, h, w}, depth),
		"normal_t": importer.NewFloat32("normal_t", []int{n, 3, h, w}, nrm),
	}
}

// TestAccumulateEqualsBatch checks that a step evaluated as K
// micro-batches (finetune.Accumulate over backend's loss weights) gives
// the losses and Jacobian of the whole batch to float32 round-off, for an
// MTAN whose masked losses (ignored labels, zero depths and normals)
// average over different numbers of pixels in each micro-batch.
func TestAccumulateEqualsBatch(t *testing.T) {
	raw, err := proto.Marshal(models.MTAN(models.MTANConfig{Width: 4, InputHeight: 32, InputWidth: 32, Seed: 3}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := importer.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ParseTasks([]string{"seg:nll:seg_logp:seg:ignore_index=-1", "depth:depth_l1:depth:depth_t", "normal:normal_cos:normal:normal_t"})
	if err != nil {
		t.Fatal(err)
	}
	md, err := backend.Open(m, tasks, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := accumulateBatch(6, 32, 32)
	n := md.NumParams()
	want := make([]float64, 3)
	wantJ := png.NewJacobian(3, n)
	if err := md.Evaluate(b, want, &wantJ); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{2, 3, 4} { // 4: micro-batches of 1 and 2
		p := finetune.Accumulate(md, k)
		got := make([]float64, 3)
		gotJ := png.NewJacobian(3, n)
		if err := p.Evaluate(b, got, &gotJ); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
				t.Errorf("K=%d: loss %d = %.9g, whole batch %.9g", k, i, got[i], want[i])
			}
		}
		for i := 0; i < 3; i++ {
			row, wrow := gotJ.Row(i), wantJ.Row(i)
			var scale float64
			for _, v := range wrow {
				scale = max(scale, math.Abs(float64(v)))
			}
			for j := range wrow {
				if d := math.Abs(float64(row[j] - wrow[j])); d > 5e-5*scale {
					t.Fatalf("K=%d: J[%d,%d] = %g, whole batch %g (row max %g)", k, i, j, row[j], wrow[j], scale)
				}
			}
		}
		// Weighting by examples instead of loss weights would not match.
		if k == 3 {
			plain := finetune.Accumulate(exampleWeighted{md}, k)
			if err := plain.Evaluate(b, got, nil); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got[1]-want[1]) < 1e-4*math.Abs(want[1]) {
				t.Errorf("depth loss weighted by examples %.9g equals the whole batch's %.9g: the test data does not exercise the weights", got[1], want[1])
			}
		}
	}
}

// exampleWeighted hides backend's LossWeights.
type exampleWeighted struct{ finetune.Problem }
