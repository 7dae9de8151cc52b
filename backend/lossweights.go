package backend

import (
	"fmt"

	"github.com/paretonav/paretonav/backend/internal/loss"
	"github.com/paretonav/paretonav/importer"
)

// LossWeights returns, per task and then per term, the number of elements
// of batch its loss averages over (the loss kind's count: targets not
// equal to ignore_index for nll and ce, every target element for mse and
// l1, non-zero targets for depth_l1, pixels whose target normal is not
// zero for normal_cos), and the number of examples for a kind without
// target ("output", taken as a batch mean). Means over parts of a batch
// weighted by these numbers give the mean over the whole
// (finetune.Accumulate).
func (md *Model) LossWeights(batch map[string]*importer.Tensor) ([]float64, error) {
	out := make([]float64, len(md.tasks))
	for i, t := range md.tasks {
		k := loss.Lookup(t.Loss)
		if k.Count == nil {
			n := 0
			for _, in := range md.inputs {
				if a := batch[in.Name]; a != nil && len(a.Shape) > 0 {
					n = a.Shape[0]
					break
				}
			}
			out[i] = float64(n)
			continue
		}
		a := batch[t.Target]
		if a == nil {
			return nil, fmt.Errorf("backend: %s %q: no target array %q in the batch", md.kind(i), t.Name, t.Target)
		}
		n, err := k.Count(a, t.head())
		if err != nil {
			return nil, fmt.Errorf("backend: %s %q: target %q %v", md.kind(i), t.Name, t.Target, err)
		}
		out[i] = float64(n)
	}
	return out, nil
}
