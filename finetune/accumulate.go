package finetune

import (
	"fmt"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/png"
)

// WeightedProblem is a Problem whose losses are means over a number of
// elements of the batch that depends on the data (pixels with a valid
// target, labels not ignored); LossWeights gives those numbers, tasks
// then terms, so that means over parts of a batch combine into the mean
// over the whole.
type WeightedProblem interface {
	Problem
	LossWeights(b Batch) ([]float64, error)
}

// Accumulate returns p evaluating each batch as k micro-batches (k ≥ 1;
// consecutive examples, sizes differing by at most one) one after the
// other and combining them: every loss (and term) is the weighted mean of
// the micro-batches' losses, every gradient the same weighted mean of
// theirs, with the weights of p.LossWeights when p is a WeightedProblem
// and the micro-batches' example counts otherwise. For losses that are
// means over those weights, the result is the whole batch's, to float32
// round-off, at the memory of one micro-batch (plus one more Jacobian).
// A batch with fewer than k examples runs as that many micro-batches of
// one. The returned problem is a TermProblem; its terms are p's.
func Accumulate(p Problem, k int) Problem {
	if k <= 1 {
		return p
	}
	return &accumulated{Problem: p, k: k}
}

type accumulated struct {
	Problem
	k        int
	jac, tj  png.Jacobian
	ls, ts   []float64
	wsum, wk []float64
}

// Theta returns p's parameter vector when p shares it (SharedParams),
// else nil.
func (a *accumulated) Theta() []float32 {
	if sp, ok := a.Problem.(SharedParams); ok {
		return sp.Theta()
	}
	return nil
}

// Lends reports whether p lends buffers (ScratchLender).
func (a *accumulated) Lends() bool {
	sl, ok := a.Problem.(ScratchLender)
	return ok && sl.Lends()
}

// Lend returns a buffer of n values lent by p.
func (a *accumulated) Lend(n int) []float32 { return a.Problem.(ScratchLender).Lend(n) }

// TakeBack returns b to p.
func (a *accumulated) TakeBack(b []float32) { a.Problem.(ScratchLender).TakeBack(b) }

// Terms returns p's terms (none unless p is a TermProblem).
func (a *accumulated) Terms() []string { return termsOf(a.Problem) }

// Evaluate is EvaluateTerms without terms.
func (a *accumulated) Evaluate(b Batch, losses []float64, jac *png.Jacobian) error {
	return a.EvaluateTerms(b, losses, nil, jac, nil)
}

// EvaluateTerms evaluates b as micro-batches and combines them.
func (a *accumulated) EvaluateTerms(b Batch, losses, terms []float64, jac, tjac *png.Jacobian) error {
	N := batchLen(b)
	k := min(a.k, max(N, 1))
	m, t, n := len(losses), len(terms), a.NumParams()
	if len(a.ls) != m || len(a.ts) != t {
		a.ls, a.ts = make([]float64, m), make([]float64, t)
		a.wsum, a.wk = make([]float64, m+t), make([]float64, m+t)
	}
	if jac != nil && (a.jac.M != m || a.jac.N != n) {
		a.jac = png.NewJacobian(m, n)
	}
	if tjac != nil && (a.tj.M != t || a.tj.N != n) {
		a.tj = png.NewJacobian(t, n)
	}
	clear(losses)
	clear(terms)
	clear(a.wsum)
	if jac != nil {
		clear(jac.Data)
	}
	if tjac != nil {
		clear(tjac.Data)
	}
	wp, weighted := a.Problem.(WeightedProblem)
	tp, _ := a.Problem.(TermProblem)
	for i := 0; i < k; i++ {
		lo, hi := i*N/k, (i+1)*N/k
		mb := sliceBatch(b, lo, hi, N)
		if weighted {
			w, err := wp.LossWeights(mb)
			if err != nil {
				return err
			}
			if len(w) != m+t {
				return fmt.Errorf("finetune: accumulate: %d loss weights, expected %d", len(w), m+t)
			}
			copy(a.wk, w)
		} else {
			for j := range a.wk {
				a.wk[j] = float64(hi - lo)
			}
		}
		var jp, tjp *png.Jacobian
		if jac != nil {
			jp = &a.jac
		}
		if tjac != nil {
			tjp = &a.tj
		}
		var err error
		if t > 0 {
			err = tp.EvaluateTerms(mb, a.ls, a.ts, jp, tjp)
		} else {
			err = a.Problem.Evaluate(mb, a.ls, jp)
		}
		if err != nil {
			return err
		}
		for j := 0; j < m+t; j++ {
			w := a.wk[j]
			if w == 0 {
				continue // nothing of this loss in the micro-batch
			}
			a.wsum[j] += w
			if j < m {
				losses[j] += w * a.ls[j]
				if jac != nil {
					axpy32(jac.Row(j), a.jac.Row(j), w)
				}
			} else {
				terms[j-m] += w * a.ts[j-m]
				if tjac != nil {
					axpy32(tjac.Row(j-m), a.tj.Row(j-m), w)
				}
			}
		}
	}
	for j := 0; j < m+t; j++ {
		s := a.wsum[j]
		if s == 0 {
			s = 1 // every micro-batch had weight 0: losses and rows stay 0
		}
		if j < m {
			losses[j] /= s
			if jac != nil {
				scale32(jac.Row(j), 1/s)
			}
		} else {
			terms[j-m] /= s
			if tjac != nil {
				scale32(tjac.Row(j-m), 1/s)
			}
		}
	}
	return nil
}

// axpy32 adds w·x to y, rounding each sum to float32.
func axpy32(y, x []float32, w float64) {
	for i, v := range x {
		y[i] = float32(float64(y[i]) + w*float64(v))
	}
}

// scale32 multiplies x by s.
func scale32(x []float32, s float64) {
	for i, v := range x {
		x[i] = float32(float64(v) * s)
	}
}

// batchLen is the number of examples of b (the first dimension of its
// arrays; 0 when it has none).
func batchLen(b Batch) int {
	for _, t := range b {
		if t != nil && len(t.Shape) > 0 {
			return t.Shape[0]
		}
	}
	return 0
}

// sliceBatch returns examples [lo, hi) of the N in b, sharing storage.
// Arrays without the example dimension are passed as they are.
func sliceBatch(b Batch, lo, hi, N int) Batch {
	out := make(Batch, len(b))
	for name, t := range b {
		if t == nil || len(t.Shape) == 0 || t.Shape[0] != N {
			out[name] = t
			continue
		}
		row := 1
		for _, s := range t.Shape[1:] {
			row *= s
		}
		s := &importer.Tensor{Name: t.Name, Type: t.Type, Shape: append([]int{hi - lo}, t.Shape[1:]...)}
		switch {
		case t.F32 != nil:
			s.F32 = t.F32[lo*row : hi*row]
		case t.F64 != nil:
			s.F64 = t.F64[lo*row : hi*row]
		case t.I64 != nil:
			s.I64 = t.I64[lo*row : hi*row]
		}
		out[name] = s
	}
	return out
}
