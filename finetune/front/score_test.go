package front

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/models"
)

// lenetTasks are the two classification tasks of models.LeNet2.
func lenetTasks(t testing.TB) []backend.Task {
	t.Helper()
	var out []backend.Task
	for _, s := range []string{"left:nll:logp_left:left", "right:nll:logp_right:right"} {
		tk, err := backend.ParseTask(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

// randomData returns n random 36×36 images with random labels.
func randomData(n int, seed uint64) *finetune.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n*36*36)
	for i := range x {
		x[i] = rng.Float32()
	}
	l, r := make([]int64, n), make([]int64, n)
	for i := range l {
		l[i], r[i] = int64(rng.IntN(10)), int64(rng.IntN(10))
	}
	return &finetune.Dataset{Arrays: map[string]*importer.Tensor{
		"x":     importer.NewFloat32("x", []int{n, 1, 36, 36}, x),
		"left":  importer.NewInt64("left", []int{n}, l),
		"right": importer.NewInt64("right", []int{n}, r),
	}}
}

// TestScoreAccuracy checks Score's accuracy against one computed without
// outputs: for a single example, the nll loss with label c is −logp[c],
// so the predicted class is the label of smallest loss.
func TestScoreAccuracy(t *testing.T) {
	m := &importer.Model{Proto: models.LeNet2(3)}
	tasks := lenetTasks(t)
	md, err := backend.Open(m, tasks, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	data := randomData(n, 1)
	losses, acc, err := Score(md, tasks, data, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 2)
	if err := md.Evaluate(data.Slice(0, n), want, nil); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(losses[i]-want[i]) > 1e-5 {
			t.Errorf("task %d: loss %v, backend on the whole set %v", i, losses[i], want[i])
		}
	}
	hits := make([]float64, 2)
	l := make([]float64, 2)
	for i := range n {
		b := data.Slice(i, i+1)
		label := [2]int64{b["left"].I64[0], b["right"].I64[0]}
		best := [2]float64{math.Inf(1), math.Inf(1)}
		arg := [2]int64{}
		for c := range int64(10) {
			b["left"].I64[0], b["right"].I64[0] = c, c
			if err := md.Evaluate(b, l, nil); err != nil {
				t.Fatal(err)
			}
			for k := range 2 {
				if l[k] < best[k] {
					best[k], arg[k] = l[k], c
				}
			}
		}
		for k := range 2 {
			if arg[k] == label[k] {
				hits[k]++
			}
		}
	}
	for k := range 2 {
		if w := hits[k] / n; math.Abs(acc[k]-w) > 1e-12 {
			t.Errorf("task %d: accuracy %v, want %v (argmin of single-example nll)", k, acc[k], w)
		}
	}
}
