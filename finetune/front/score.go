package front

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/metrics"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// Classifier is a model that reports its task losses on a batch
// (finetune.Problem's Evaluate) and, for accuracies, the values of named
// outputs (backend.Model.Outputs).
type Classifier interface {
	Evaluate(b finetune.Batch, losses []float64, jac *png.Jacobian) error
	Outputs(b map[string]*importer.Tensor, names ...string) (map[string]*importer.Tensor, error)
}

// IsClassification reports whether task t has an accuracy: its loss kind's
// metrics are classes (nll, ce), its output's second axis holding them.
func IsClassification(t backend.Task) bool { return metricsOf(t) == backend.MetricsClasses }

// Score returns md's task losses and accuracies over data, in file order,
// batchSize examples at a time, each batch weighted by its size. The
// accuracy of a classification task (IsClassification) with an [N, C]
// output is the fraction of examples whose label has the largest output
// (the first largest, like argmax); examples labelled with the task's
// ignore_index are left out; with per-pixel targets ([N, C, d...]
// outputs) it is the pixel accuracy of Meter. Other tasks get NaN.
func Score(md Classifier, tasks []backend.Task, data *finetune.Dataset, batchSize int) (losses, acc []float64, err error) {
	losses, acc, _, err = ScoreMetrics(md, tasks, data, batchSize)
	return losses, acc, err
}

// ScoreMetrics is Score that also accumulates the tasks' metrics (Meter) over
// the same batches and outputs: by task and metric name, nil when no task
// has metrics.
func ScoreMetrics(md Classifier, tasks []backend.Task, data *finetune.Dataset, batchSize int) (losses, acc []float64, met map[string]map[string]float64, err error) {
	if data.Empty() {
		return nil, nil, nil, errors.New("front: Score: no data")
	}
	if batchSize < 1 {
		batchSize = finetune.DefaultBatchSize
	}
	m := len(tasks)
	var outs []string
	for _, t := range tasks {
		if IsClassification(t) {
			outs = append(outs, t.Output)
		}
	}
	meter := NewMeter(tasks)
	for _, o := range meter.Outputs() {
		if !slices.Contains(outs, o) {
			outs = append(outs, o)
		}
	}
	n := data.Len()
	losses, acc = make([]float64, m), make([]float64, m)
	hits, counted := make([]int, m), make([]int, m)
	tmp := make([]float64, m)
	for i := 0; i < n; i += batchSize {
		j := min(i+batchSize, n)
		b, err := data.Rows(i, j)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("front: %w", err)
		}
		if err := md.Evaluate(b, tmp, nil); err != nil {
			return nil, nil, nil, fmt.Errorf("front: examples %d..%d: %w", i, j-1, err)
		}
		for k, v := range tmp {
			losses[k] += v * float64(j-i) / float64(n)
		}
		if len(outs) == 0 {
			continue
		}
		vals, err := md.Outputs(b, outs...)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("front: examples %d..%d: %w", i, j-1, err)
		}
		if err := meter.AddOutputs(vals, b); err != nil {
			return nil, nil, nil, fmt.Errorf("front: examples %d..%d: metrics: %w", i, j-1, err)
		}
		for k, t := range tasks {
			if !IsClassification(t) || (vals[t.Output] != nil && len(vals[t.Output].Shape) > 2) {
				continue // per-pixel targets: the meter's pixel accuracy
			}
			h, c, err := countHits(vals[t.Output], b[t.Target], t.IgnoreIndex)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("front: task %q, examples %d..%d: %w", t.Name, i, j-1, err)
			}
			hits[k] += h
			counted[k] += c
		}
	}
	for k, t := range tasks {
		acc[k] = math.NaN()
		if IsClassification(t) && counted[k] > 0 {
			acc[k] = float64(hits[k]) / float64(counted[k])
		}
	}
	if !meter.Empty() {
		met = meter.Result()
	}
	for k, t := range tasks {
		if v, ok := met[t.Name][metrics.PixelAcc]; ok && IsClassification(t) {
			acc[k] = v
		}
	}
	return losses, acc, met, nil
}

// countHits compares the argmax of every row of out [N, C] with labels [N]
// and returns the number of hits and of labels counted (those ≠ ignore).
func countHits(out, labels *importer.Tensor, ignore int64) (hits, counted int, err error) {
	if out == nil || labels == nil {
		return 0, 0, errors.New("output or target array missing")
	}
	if len(out.Shape) != 2 {
		return 0, 0, fmt.Errorf("output has shape %v; an accuracy needs [N, classes]", out.Shape)
	}
	N, C := out.Shape[0], out.Shape[1]
	y := labels.Float64s()
	if len(y) != N {
		return 0, 0, fmt.Errorf("target array has %d labels for %d rows of output", len(y), N)
	}
	v := out.Float64s()
	for i := range N {
		if int64(y[i]) == ignore {
			continue
		}
		row := v[i*C : (i+1)*C]
		best := 0
		for c, x := range row {
			if x > row[best] {
				best = c
			}
		}
		counted++
		if float64(best) == y[i] {
			hits++
		}
	}
	return hits, counted, nil
}
