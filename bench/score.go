package bench

import (
	"fmt"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

// outputer is the part of backend.Model that score needs.
type outputer interface {
	Outputs(b map[string]*importer.Tensor, names ...string) (map[string]*importer.Tensor, error)
}

// score returns md's test losses and accuracies over data with one
// forward pass per batch: every task of Tasks is nll on an output of
// log-probabilities [N, C], so the loss (the mean of −log p of the label,
// labels equal to the task's ignore_index left out, as backend's nll) and
// the accuracy (argmax, the first largest) both come from the outputs.
// front.Score makes two passes (losses, then outputs) for any task kind;
// on the benchmark's tasks the two agree (TestScoreMatchesFront) and one
// pass halves the cost of scoring.
func score(md outputer, tasks []backend.Task, data *finetune.Dataset, batchSize int) (losses, acc []float64, err error) {
	names := make([]string, len(tasks))
	for k, t := range tasks {
		if t.Loss != "nll" {
			return nil, nil, fmt.Errorf("bench: task %q: loss %s, the one-pass scorer reads nll only", t.Name, t.Loss)
		}
		names[k] = t.Output
	}
	n := data.Len()
	if n == 0 {
		return nil, nil, fmt.Errorf("bench: score: no test data")
	}
	sum, hits, counted := make([]float64, len(tasks)), make([]int, len(tasks)), make([]int, len(tasks))
	for i := 0; i < n; i += batchSize {
		j := min(i+batchSize, n)
		b := data.Slice(i, j)
		vals, err := md.Outputs(b, names...)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: examples %d..%d: %w", i, j-1, err)
		}
		for k, t := range tasks {
			out, lab := vals[t.Output], b[t.Target]
			if out == nil || lab == nil || len(out.Shape) != 2 {
				return nil, nil, fmt.Errorf("bench: task %q, examples %d..%d: want output [N, C] and labels", t.Name, i, j-1)
			}
			N, C := out.Shape[0], out.Shape[1]
			v, y := out.Float64s(), lab.Float64s()
			if len(y) != N {
				return nil, nil, fmt.Errorf("bench: task %q: %d labels for %d rows", t.Name, len(y), N)
			}
			for r := range N {
				if int64(y[r]) == t.IgnoreIndex {
					continue
				}
				c := int(y[r])
				if c < 0 || c >= C {
					return nil, nil, fmt.Errorf("bench: task %q: label %v outside [0, %d)", t.Name, y[r], C)
				}
				row := v[r*C : (r+1)*C]
				best := 0
				for q, x := range row {
					if x > row[best] {
						best = q
					}
				}
				sum[k] -= row[c]
				counted[k]++
				if best == c {
					hits[k]++
				}
			}
		}
	}
	losses, acc = make([]float64, len(tasks)), make([]float64, len(tasks))
	for k := range tasks {
		if counted[k] == 0 {
			return nil, nil, fmt.Errorf("bench: task %q: every label is ignored", tasks[k].Name)
		}
		losses[k] = sum[k] / float64(counted[k])
		acc[k] = float64(hits[k]) / float64(counted[k])
	}
	return losses, acc, nil
}
