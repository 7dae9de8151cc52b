package backend

import (
	"runtime"
	"sync/atomic"
	"weak"

	"gorgonia.org/tensor"

	"github.com/paretonav/paretonav/internal/par"
)

// concurrentPasses is how many of the m backward passes of pl may run at
// once: 1 when they recompute forward values (they would write them into
// the forward values' places) or when the extra passes' values would
// exceed maxBytes (execOptions.concurrentPassMaxBytes).
func concurrentPasses(pl *plan, m int, remat bool, maxBytes int64) int {
	c := min(m, runtime.GOMAXPROCS(0))
	if c <= 1 || remat || maxBytes < 0 {
		return 1
	}
	if int64(c-1)*pl.passRise(pl.bytes) > maxBytes {
		return 1
	}
	return c
}

// fork returns a program that runs backward passes beside p's: it shares
// p's plan, forward values, zero values and buffer pool, and has its own
// backward values. p's forward values must stay put while the fork runs
// (its passes read them; it never frees them: it does not own them).
// Forks are kept in p.forks and made again from p on each call (p's
// fields, such as sinkOf, change between Evaluates) over their own
// slices: w is the fork's index, one per goroutine of eachPass.
func (p *program) fork(w int) *program {
	q := p.forks[w]
	if q == nil {
		q = &program{}
		p.forks[w] = q
	}
	vals, owned, made, live := q.vals, q.owned, q.made, q.live
	*q = *p
	q.forks = nil
	q.vals = append(vals[:0], p.vals...)
	q.owned = zeroed(owned, len(p.owned))
	q.made = zeroed(made, len(p.made))
	q.live = live[:0]
	return q
}

// makeSinkWrap gives p.sinkWrap a row for every task of tasks, when
// gradients go into the Jacobian (sinkOf), before the passes run.
func (p *program) makeSinkWrap(tasks []int) {
	if p.sinkOf == nil {
		return
	}
	if p.sinkWrap == nil {
		p.sinkWrap = new([][]weak.Pointer[tensor.Dense])
	}
	w := p.sinkWrap
	for _, k := range tasks {
		for len(*w) <= k {
			*w = append(*w, nil)
		}
		if len((*w)[k]) != len(p.nodes) {
			(*w)[k] = make([]weak.Pointer[tensor.Dense], len(p.nodes))
		}
	}
}

// zeroed returns s with length n and every element zero, reusing its
// backing array when it has the capacity.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// dropForward drops q's references to the forward values of the pass's
// program after a fork's passes: they belong to it, and a kept fork must
// not keep them from the garbage collector until the next step.
func (q *program) dropForward() { clear(q.vals) }

// makeZeros makes, before passes run concurrently, the zero values the
// passes of tasks read (backward makes them on first use otherwise).
func (p *program) makeZeros(tasks []int) {
	for _, k := range tasks {
		for _, i := range p.plan.zeroed[k] {
			if p.zeros[i] == nil {
				p.zeros[i] = p.zero.value(p.nodes[i], p.plan.zeroMax)
			}
		}
	}
}

// eachPass runs the backward passes of tasks, calling done(k, q) after
// task k's pass with q the program holding its values (readable until
// done returns). With plan.conc > 1, up to that many passes run at once,
// each goroutine on its own fork of p taking the next task when its pass
// is done (done may then run concurrently for different tasks);
// otherwise p runs them one after another. A goroutine stops at its first
// error; eachPass returns the first in task order (a passError for a
// pass's own).
func (p *program) eachPass(tasks []int, dt tensor.Dtype, done func(k int, q *program) error) error {
	p.endPass()
	c := min(p.plan.conc, len(tasks))
	if c > 1 {
		p.makeZeros(tasks)
	}
	p.makeSinkWrap(tasks)
	errs := make([]error, len(tasks))
	var next atomic.Int32
	if c > 1 && len(p.forks) < c {
		p.forks = append(p.forks, make([]*program, c-len(p.forks))...)
	}
	par.For(c, func(w int) {
		q := p
		if c > 1 {
			q = p.fork(w)
			defer q.dropForward()
		}
		defer q.endPass()
		for {
			t := int(next.Add(1) - 1)
			if t >= len(tasks) {
				return
			}
			if err := q.backward(tasks[t], dt); err != nil {
				errs[t] = passError{tasks[t], err}
				return
			}
			if errs[t] = done(tasks[t], q); errs[t] != nil {
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// passError is an error of task k's backward pass.
type passError struct {
	k   int
	err error
}

func (e passError) Error() string { return e.err.Error() }
func (e passError) Unwrap() error { return e.err }
