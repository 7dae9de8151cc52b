package backend

import "github.com/paretonav/paretonav/importer/onnxpb"

// Transpose (perm defaults to reversing the axes).

func init() { register("Transpose", 1, lowerTranspose) }

func lowerTranspose(b *builder, n *onnxpb.NodeProto, in []*value) ([]*value, error) {
	x, err := input(n, in, 0)
	if err != nil {
		return nil, err
	}
	r := len(x.shape)
	perm, err := attrInts(n, "perm", nil)
	if err != nil {
		return nil, err
	}
	if perm == nil {
		for i := r - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != r {
		return nil, nodeErr(n, "perm %v has %d entries for an input of rank %d", perm, len(perm), r)
	}
	seen := make([]bool, r)
	out := make([]int, r)
	for i, p := range perm {
		if p < 0 || int(p) >= r || seen[p] {
			return nil, nodeErr(n, "perm %v is not a permutation of 0..%d", perm, r-1)
		}
		seen[p] = true
		out[i] = x.shape[p]
	}
	ist := strides(x.shape)
	idx := make([]int, numel(out))
	ctr := make([]int, r)
	for i := range idx {
		off := 0
		for d := 0; d < r; d++ {
			off += ctr[d] * ist[perm[d]]
		}
		idx[i] = off
		nextIndex(ctr, out)
	}
	v, err := b.move(n, "Transpose", []*value{x}, out, idx)
	if err != nil {
		return nil, err
	}
	return []*value{v}, nil
}
