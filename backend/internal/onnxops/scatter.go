package onnxops

import (
	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ScatterElements (opset 11; reduction none/add/mul from 16, max/min from
// 18) and its predecessor Scatter (opsets 9-10): a copy of data in which
// the element of updates at position u goes to u with its axis coordinate
// replaced by indices[u] (negative indices count from the end). indices
// must be known when the graph is built. With reduction none a later
// update of the same element wins (ONNX leaves duplicates undefined);
// add, mul, max and min combine data and every update of an element.
// Differentiable in data and updates (max and min send the gradient to
// the first maximal value, data before updates).

func init() {
	graph.Register("Scatter", 9, lowerScatter)
	graph.Register("ScatterElements", 11, lowerScatter)
	graph.Register("ScatterElements", 16, lowerScatter)
	graph.Register("ScatterElements", 18, lowerScatter)
}

// scatterReductions lists the reductions allowed from an opset on.
var scatterReductions = map[string]int64{"none": 0, "add": 16, "mul": 16, "max": 18, "min": 18}

func lowerScatter(b *graph.Builder, n *onnxpb.NodeProto, in []*graph.Value) ([]*graph.Value, error) {
	data, err := graph.Input(n, in, 0)
	if err != nil {
		return nil, err
	}
	it, err := graph.ConstInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	upd, err := graph.Input(n, in, 2)
	if err != nil {
		return nil, err
	}
	red, err := graph.AttrString(n, "reduction", "none")
	if err != nil {
		return nil, err
	}
	if since, ok := scatterReductions[red]; !ok || b.Opset < since || (red != "none" && n.GetOpType() == "Scatter") {
		return nil, graph.NodeErr(n, "reduction %q is not defined at opset %d (none; add and mul from 16; max and min from 18)", red, b.Opset)
	}
	r := len(data.Shape)
	a, err := graph.AxisAttr(n, 0, r)
	if err != nil {
		return nil, err
	}
	if !shape.Equal(it.Shape, upd.Shape) || len(it.Shape) != r {
		return nil, graph.NodeErr(n, "indices %v and updates %v must have one shape, of data's rank %d", it.Shape, upd.Shape, r)
	}
	for d := 0; d < r; d++ {
		if d != a && upd.Shape[d] > data.Shape[d] {
			return nil, graph.NodeErr(n, "updates %v larger than data %v on axis %d", upd.Shape, data.Shape, d)
		}
	}
	// target[u] is the flat index in data of update u.
	ind := it.Int64s()
	target := make([]int, len(ind))
	dstr := shape.Strides(data.Shape)
	ustr := shape.Strides(upd.Shape)
	for u, v := range ind {
		if v < 0 {
			v += int64(data.Shape[a])
		}
		if v < 0 || v >= int64(data.Shape[a]) {
			return nil, graph.NodeErr(n, "index %d out of range for axis %d of size %d", ind[u], a, data.Shape[a])
		}
		t, rest := 0, u
		for d := 0; d < r; d++ {
			c := rest / ustr[d]
			rest %= ustr[d]
			if d == a {
				c = int(v)
			}
			t += c * dstr[d]
		}
		target[u] = t
	}
	// by[t] lists the updates of data element t, in order.
	by := map[int][]int{}
	for u, t := range target {
		by[t] = append(by[t], u)
	}
	combine := map[string]func(acc, v float64) float64{
		"add": func(acc, v float64) float64 { return acc + v },
		"mul": func(acc, v float64) float64 { return acc * v },
		"max": func(acc, v float64) float64 { return max(acc, v) },
		"min": func(acc, v float64) float64 { return min(acc, v) },
	}[red]
	fwd := func(dst []float64, in [][]float64) {
		copy(dst, in[0])
		for u, t := range target {
			if combine == nil {
				dst[t] = in[1][u]
			} else {
				dst[t] = combine(dst[t], in[1][u])
			}
		}
	}
	bwd := func(k int, dst []float64, in [][]float64, out, g []float64) {
		if k == 0 {
			copy(dst, g)
		}
		for t, us := range by {
			switch red {
			case "none":
				if k == 0 {
					dst[t] = 0
				} else {
					dst[us[len(us)-1]] = g[t]
				}
			case "add":
				if k == 1 {
					for _, u := range us {
						dst[u] = g[t]
					}
				}
			case "mul":
				// ∂y/∂x_j = Π_{i≠j} x_i over data[t] and its updates.
				vals := append([]float64{in[0][t]}, make([]float64, len(us))...)
				for i, u := range us {
					vals[i+1] = in[1][u]
				}
				for j := range vals {
					if (k == 0) != (j == 0) {
						continue
					}
					p := g[t]
					for i, v := range vals {
						if i != j {
							p *= v
						}
					}
					if j == 0 {
						dst[t] = p
					} else {
						dst[us[j-1]] = p
					}
				}
			case "max", "min":
				// the first value equal to the result gets the gradient.
				if k == 0 {
					if in[0][t] != out[t] {
						dst[t] = 0
					}
					continue
				}
				if in[0][t] == out[t] {
					continue
				}
				for _, u := range us {
					if in[1][u] == out[t] {
						dst[u] = g[t]
						break
					}
				}
			}
		}
	}
	y, err := b.Kernel(n.GetName(), n.GetOpType(), []graph.Node{b.Node(data), b.Node(upd)}, data.Shape, fwd, bwd, nil)
	if err != nil {
		return nil, err
	}
	return []*graph.Value{graph.NodeValue(y)}, nil
}
