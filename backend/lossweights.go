package backend

import (
	"fmt"

	"github.com/paretonav/paretonav/importer"
)

// LossWeights returns, per task and then per term, the number of elements
// of batch its loss averages over: targets not equal to ignore_index (nll,
// ce), every target element (mse, l1), non-zero targets (depth_l1),
// pixels whose target normal is not zero (normal_cos), and the number of
// examples for "output" losses (taken as batch means). Means over parts of
// a batch weighted by these numbers give the mean over the whole
// (finetune.Accumulate).
func (md *Model) LossWeights(batch map[string]*importer.Tensor) ([]float64, error) {
	out := make([]float64, len(md.tasks))
	for i, t := range md.tasks {
		if t.Loss == "output" {
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
		v := a.Float64s()
		k := 0
		switch t.Loss {
		case "nll", "ce":
			ignore := float64(t.IgnoreIndex)
			for _, x := range v {
				if x != ignore {
					k++
				}
			}
		case "mse", "l1":
			k = len(v)
		case "depth_l1":
			for _, x := range v {
				if x != 0 {
					k++
				}
			}
		case "normal_cos":
			if len(a.Shape) < 2 {
				return nil, fmt.Errorf("backend: %s %q: target %q has shape %v, expected [N, C, ...]", md.kind(i), t.Name, t.Target, a.Shape)
			}
			N, C := a.Shape[0], a.Shape[1]
			inner := len(v) / max(N*C, 1)
			for n := 0; n < N; n++ {
				for j := 0; j < inner; j++ {
					for c := 0; c < C; c++ {
						if v[(n*C+c)*inner+j] != 0 {
							k++
							break
						}
					}
				}
			}
		default:
			return nil, fmt.Errorf("backend: %s %q: no loss weight for loss %q", md.kind(i), t.Name, t.Loss)
		}
		out[i] = float64(k)
	}
	return out, nil
}
