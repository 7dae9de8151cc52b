package finetune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paretonav/paretonav/finetune/internal/stepvec"
	"github.com/paretonav/paretonav/internal/par"
	"github.com/paretonav/paretonav/png"
)

// Run trains p: at every step it takes a batch of train, evaluates the
// task losses and their gradients J, the criterion F and ∂F/∂ℓ, asks
// s.Method for a direction v, and hands v to the optimizer. rec (may be
// nil) sees the configuration, every step and the result. val (may be
// nil) is evaluated every s.ValEvery steps and at the end.
//
// Reaching the step limit is Status StepLimit with a nil error. A
// cancelled ctx writes a checkpoint (when s.CheckpointPath is set) and
// returns Status Interrupted with an *InterruptedError. Non-finite values
// roll back to the last good parameters with a halved learning rate, up to
// s.MaxRetries times, then fail with a *NonFiniteError.
func Run(ctx context.Context, p Problem, train, val *Dataset, s *Settings, rec Recorder) (*Result, error) {
	return run(ctx, []Problem{p}, train, val, s, rec, "", false)
}

// RunMulti trains N models together, one Problem each (independent
// instances with the same tasks and parameter count). With s.Multi (the
// energy) every model k gets ∂E/∂L_k as its criterion gradient and its own
// direction and optimizer state; without it every model follows
// s.Criterion on its own. All models see the same batches.
func RunMulti(ctx context.Context, ps []Problem, train, val *Dataset, s *Settings, rec Recorder) (*Result, error) {
	return run(ctx, ps, train, val, s, rec, "", true)
}

// Resume continues the run saved in the checkpoint at path. With the same
// problem, data and settings as the interrupted run, it ends with
// bit-identical parameters to a run that was never interrupted.
func Resume(ctx context.Context, path string, p Problem, train, val *Dataset, s *Settings, rec Recorder) (*Result, error) {
	return run(ctx, []Problem{p}, train, val, s, rec, path, false)
}

// ResumeMulti is Resume for RunMulti.
func ResumeMulti(ctx context.Context, path string, ps []Problem, train, val *Dataset, s *Settings, rec Recorder) (*Result, error) {
	return run(ctx, ps, train, val, s, rec, path, true)
}

// point is one model's state in the loop.
type point struct {
	p      Problem
	theta  []float32
	shared bool          // theta is the problem's own vector (SharedParams)
	lender ScratchLender // lends dir, prop, metric and bound (nil: the loop allocates them)
	losses []float64     // x[:m]
	jac    png.Jacobian
	coef   []float64 // g[:m]
	x, g   []float64 // values (tasks, terms, drift: see layout) and ∂F/∂x
	terms  []float64 // x[m:m+t]
	tp     TermProblem
	tjac   png.Jacobian // term gradients (t×n)
	theta0 []float32    // parameters at the start of the run, when drift is read
	extra  []float32    // Gradient.Extra: ∇F outside the span of J
	dir    []float32
	// opt is the optimizer's state before the pending update (see base).
	opt   OptState
	st    png.State
	info  png.Info
	f     float64
	dloss []float64 // ∇ℓ_iᵀΔθ of the last applied update

	// The optimizer's proposal for dir and its metric; PNG's constrained
	// update of the proposal is written over prop (png.Constrainer allows
	// dst to be prop) and is made when hasUpd; minfo reports the
	// constraint (nil when it was not posed).
	prop, metric []float32
	bound        []float32 // Adam's trust region for the update
	hasUpd       bool
	minfo        *png.MetricInfo

	initLosses []float64
	initF      float64

	// The last update is pending: theta holds its result, while base (θ
	// before it) and opt (the optimizer's state before it) are kept with
	// the direction pendDir and the update pendUpd it was made with (nil:
	// the optimizer's own), so that a bad next step returns to base and
	// redoes the update at a lower rate (rollback). The optimizer's state
	// after it, opt advanced by pendDir, is computed where it is read
	// (Settings.moments) and stored when the next update is made (commit):
	// one copy of the optimizer's state and of θ serves both the step and
	// the way back.
	base       []float32
	pendDir    []float32
	pendUpd    []float32 // valid when pendHasUpd
	pendHasUpd bool
	pending    bool
}

type loop struct {
	s          Settings
	obj        objective
	lay        layout
	pts        []*point
	train, val *Dataset
	tasks      []string
	m, n       int
	rec        Recorder
	start      time.Time
	dirTime    time.Duration // the last evalStep's directions (Step.Direction)

	total    int
	step     int // steps completed
	epoch    int
	pos      int
	batches  [][]int
	batch    Batch
	batchKey [2]int
	haveB    bool

	lrScale  float64
	retries  int
	hasPrev  bool
	prevStep int
	initF    float64
	F        float64
	lastCkpt string
	ckptErr  error // the last periodic checkpoint's failure (nil: it was written)
	L, coefs [][]float64
	perF     []float64

	dirs   [][]float32 // scratch for png.MultiDirection
	jacs   []png.Jacobian
	grads  []png.Gradient
	states []*png.State
}

// bad describes a non-finite value or a diverged model found during a
// step.
type bad struct {
	model int
	what  string
	err   error
	div   *DivergedError // set for a diverged model
}

func run(ctx context.Context, ps []Problem, train, val *Dataset, s *Settings, rec Recorder, resume string, multi bool) (res *Result, err error) {
	l, err := newLoop(ps, train, val, s, rec, multi)
	if err != nil {
		return nil, err
	}
	if resume != "" {
		if err := l.restore(resume); err != nil {
			return nil, err
		}
	}
	if err := l.rec.Init(l.config(multi)); err != nil {
		return nil, fmt.Errorf("finetune: recorder: %w", err)
	}
	res, err = l.loop(ctx)
	if derr := l.rec.Done(res); derr != nil && err == nil {
		err = fmt.Errorf("finetune: recorder: %w", derr)
	}
	return res, err
}

func newLoop(ps []Problem, train, val *Dataset, s *Settings, rec Recorder, multi bool) (*loop, error) {
	rs, err := s.resolved()
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, errors.New("finetune: no problem to train")
	}
	for _, d := range []struct {
		name string
		d    *Dataset
	}{{"training set", train}, {"validation set", val}} {
		if d.d != nil {
			if err := d.d.Validate(); err != nil {
				return nil, fmt.Errorf("%w (%s)", err, d.name)
			}
		}
	}
	tasks := ps[0].Tasks()
	n := ps[0].NumParams()
	for k, p := range ps[1:] {
		if err := checkTasks(fmt.Sprintf("model %d", k+1), p.Tasks(), tasks); err != nil {
			return nil, err
		}
		if p.NumParams() != n {
			return nil, fmt.Errorf("finetune: model %d has %d parameters, model 0 has %d", k+1, p.NumParams(), n)
		}
	}
	obj := objective{c: rs.Criterion, tasks: len(tasks), scale: rs.MultiScale, trade: rs.MultiTrade}
	if multi {
		obj.m = rs.Multi
	}
	if obj.m != nil {
		obj.pm = rs.PerModel
	}
	if obj.c == nil && obj.m == nil {
		obj.c = sumCriterion{tasks}
	}
	if obj.c != nil {
		if err := checkTasks("criterion "+obj.c.String(), obj.c.Tasks(), tasks); err != nil {
			return nil, err
		}
	}
	if obj.m != nil {
		if err := checkTasks("criterion "+obj.m.String(), obj.m.Tasks(), tasks); err != nil {
			return nil, err
		}
	}
	if obj.pm != nil {
		if err := checkTasks("per-model criterion "+obj.pm.String(), obj.pm.Tasks(), tasks); err != nil {
			return nil, err
		}
	}
	lay, idx, err := newLayout(ps, tasks, obj.c, obj.pm)
	if err != nil {
		return nil, err
	}
	obj.cIdx, obj.pmIdx = idx[0], idx[1]
	if rec == nil {
		rec = Multi()
	}
	l := &loop{s: rs, obj: obj, lay: lay, train: train, val: val, tasks: tasks, m: len(tasks), n: n, rec: rec, lrScale: 1}
	l.total = rs.totalSteps(train.Len())
	for _, p := range ps {
		pt := &point{p: p, jac: png.NewJacobian(l.m, n)}
		if sl, ok := p.(ScratchLender); ok && sl.Lends() {
			pt.lender = sl
		}
		if sp, ok := p.(SharedParams); ok {
			if th := sp.Theta(); len(th) == n {
				pt.theta, pt.shared = th, true
			}
		}
		if !pt.shared {
			pt.theta = make([]float32, n)
			p.Params(pt.theta)
		}
		pt.initTerms(lay, n)
		l.pts = append(l.pts, pt)
		l.L = append(l.L, pt.x)
		l.coefs = append(l.coefs, pt.g)
	}
	l.perF = make([]float64, len(ps))
	l.dirs, l.jacs = make([][]float32, len(ps)), make([]png.Jacobian, len(ps))
	l.grads, l.states = make([]png.Gradient, len(ps)), make([]*png.State, len(ps))
	return l, nil
}

func (l *loop) loop(ctx context.Context) (*Result, error) {
	l.start = time.Now()
	first := l.step == 0
	for l.step < l.total {
		if err := ctx.Err(); err != nil {
			return l.interrupt(err)
		}
		b, err := l.evalStep(first)
		if err != nil {
			return l.fail(err)
		}
		if b != nil {
			if err := l.rollback(b); err != nil {
				return l.fail(err)
			}
			continue
		}
		first = false
		lr := l.s.lrAt(l.step, l.total) * l.lrScale
		l.commit()
		for k, pt := range l.pts {
			if !l.s.applyTheta(pt.theta, pt.base, pt.pendDir, pt.pendingUpd(), pt.opt, lr) {
				if err := l.rollback(&bad{model: k, what: "parameters"}); err != nil {
					return l.fail(err)
				}
				lr = l.s.lrAt(l.step, l.total) * l.lrScale
				break
			}
		}
		if err := l.setParams(); err != nil {
			return l.fail(err)
		}
		for _, pt := range l.pts {
			pt.dloss = firstOrderChange(pt.dloss, pt.jac, pt.base, pt.theta)
		}
		l.step++
		l.advance()
		st := l.stepRecord(lr)
		if l.val != nil && l.s.ValEvery > 0 && l.step%l.s.ValEvery == 0 {
			for k, pt := range l.pts {
				if st.Points[k].ValLosses, st.Points[k].ValMetrics, err = l.validate(k, pt); err != nil {
					return l.fail(err)
				}
			}
		}
		l.retries = 0
		if err := l.rec.Record(st); err != nil {
			return l.fail(fmt.Errorf("finetune: recorder at step %d: %w", l.step, err))
		}
		if l.s.CheckpointEvery > 0 && l.step%l.s.CheckpointEvery == 0 {
			// A checkpoint that cannot be written costs the safety net,
			// not the run: the training goes on and the result says so.
			l.ckptErr = l.checkpoint()
		}
	}
	return l.finish()
}

// evalStep evaluates every point on the current batch and computes the
// criterion and the directions. It returns a non-nil *bad for non-finite
// values and an error for anything else.
func (l *loop) evalStep(first bool) (*bad, error) {
	batch, err := l.currentBatch()
	if err != nil {
		return nil, err
	}
	if b, err := l.evaluate(batch, true); b != nil || err != nil {
		return b, err
	}
	if first {
		if err := l.checkNonnegative(); err != nil {
			return nil, err
		}
	}
	F, err := l.obj.eval(l.L, l.coefs, l.perF)
	if err != nil || math.IsNaN(F) || math.IsInf(F, 0) {
		return &bad{what: "criterion", err: err}, nil
	}
	for k, pt := range l.pts {
		if !finite64(pt.g) {
			return &bad{model: k, what: "criterion gradient"}, nil
		}
		pt.f = l.perF[k]
	}
	l.F = F
	if first {
		l.initF = F
		for k, pt := range l.pts {
			pt.initLosses = append([]float64(nil), pt.losses...)
			pt.initF = l.perF[k]
		}
	}
	for k, pt := range l.pts {
		pt.dir = pt.scratch(pt.dir, l.n)
		grad := pt.gradient(l.lay)
		grad.Losses = pt.losses // for EPO
		l.dirs[k], l.jacs[k], l.grads[k], l.states[k] = pt.dir, pt.jac, grad, &pt.st
	}
	dirStart := time.Now()
	infos, err := png.MultiDirection(l.dirs, l.jacs, l.grads, l.states, l.s.Method)
	if err != nil {
		if errors.Is(err, png.ErrNonFinite) {
			return &bad{what: "direction", err: err}, nil
		}
		return nil, fmt.Errorf("finetune: step %d: direction: %w", l.step+1, err)
	}
	for k, pt := range l.pts {
		pt.info = infos[k]
	}
	for k, pt := range l.pts {
		if !finite32(pt.dir) {
			return &bad{model: k, what: "direction"}, nil
		}
	}
	l.dampDrift()
	b, err := l.constrain()
	l.dirTime = time.Since(dirStart)
	return b, err
}

// checkNonnegative returns a *NegativeLossError for the first task loss
// below zero, before the first step is taken.
func (l *loop) checkNonnegative() error {
	for k, pt := range l.pts {
		for i, v := range pt.losses {
			if v < 0 {
				e := &NegativeLossError{Task: l.tasks[i], Loss: v}
				if len(l.pts) > 1 {
					e.Model = k + 1
				}
				return e
			}
		}
	}
	return nil
}

// constrain holds PNG's guarantee on the update a momentum or Adam
// optimizer actually makes: for every point with the control on, or whose
// proposal is an improper trade (png.PNG.ImproperUpdate), it poses the QP
// on the optimizer's proposal for the point's direction in the optimizer's
// metric (png.PNG.Constrain), at the rate the step the optimizer takes
// warrants: α·ρ·g_P with ρ the proposal's length relative to P∘v, at
// most its steady-direction value (stepScale). Plain SGD moves along the
// direction itself, which already satisfies it (the paper's form), and
// methods without a per-task guarantee (not png.Constrainer) are left
// alone.
func (l *loop) constrain() (*bad, error) {
	c, ok := l.s.Method.(png.Constrainer)
	for k, pt := range l.pts {
		pt.hasUpd, pt.minfo = false, nil
		if !ok || l.s.plain() || l.s.DirectionAsGradient || (!pt.info.ControlOn && !c.TestsTrades()) {
			continue
		}
		for _, b := range []*[]float32{&pt.prop, &pt.metric, &pt.bound} {
			*b = pt.scratch(*b, l.n)
		}
		var metric, bound []float32
		if l.s.propose(pt.prop, pt.metric, pt.bound, pt.dir, pt.opt, pt.pendingDir()) {
			metric, bound = pt.metric, pt.bound
		}
		if !pt.info.ControlOn {
			// The optimizer's own update, not v, is what moves the
			// model: an improper trade turns the control on for it.
			if !c.ImproperUpdate(pt.jac, pt.prop) {
				continue
			}
			pt.info.ControlOn, pt.info.Improper = true, true
		}
		mi, err := c.Constrain(pt.prop, pt.jac, pt.prop, metric, bound, stepScale(pt.prop, metric, pt.dir, l.s.steadyScale()))
		if err != nil && pt.info.Improper && errors.Is(err, png.ErrUnbounded) {
			// An improper trade at a Pareto-stationary point with
			// opposing gradients: the point holds still (png.Info.Held).
			clear(pt.prop)
			pt.info.Held, pt.hasUpd = true, true
			continue
		}
		if err != nil {
			if errors.Is(err, png.ErrNonFinite) {
				return &bad{model: k, what: "update", err: err}, nil
			}
			return nil, fmt.Errorf("finetune: step %d, model %d: constrained update: %w", l.step+1, k, err)
		}
		pt.minfo = &mi
		for _, x := range mi.Lambda {
			pt.hasUpd = pt.hasUpd || x != 0
		}
	}
	return nil, nil
}

// dampDrift takes the drift's part of an SGD step implicitly. Drift's
// gradient 2·cd·(θ − θ₀), cd = ∂F/∂drift, is the one part of ∇F whose
// curvature, 2·cd along every axis, is known: an explicit step multiplies
// θ − θ₀ by 1 − 2·lr·cd, which overshoots θ₀ once lr·cd > 1/2 and
// diverges once lr·cd > 1 (1000·drift at lr 0.01: ×(−19) per step). The
// proximal step, the exact minimiser of the step's linear model of the
// rest of F plus cd·‖θ − θ₀‖² plus ‖θ − θ_k‖²/(2·lr), is the explicit step
// divided by 1 + 2·lr·cd: θ − θ₀ then shrinks by that factor, for any
// weight, and the direction keeps its sign and PNG's guarantee (every loss
// still falls at a positive rate). It equals the explicit step to within
// 2·lr·cd, a relative 2·10⁻⁵ for 0.01·drift at lr 10⁻³. Adam normalises
// its step per parameter (AdamStepBound) and is left alone; so is a
// criterion that does not lower drift (cd ≤ 0). The point's Info.Phi and
// Info.VNorm are scaled with v: they describe the direction the optimizer
// is handed, so that ∇ℓ_iᵀΔθ ≤ −lr·φ still reads off the step record.
func (l *loop) dampDrift() {
	if l.lay.drift < 0 || l.s.Optimizer == "adam" {
		return
	}
	lr := l.s.lrAt(l.step, l.total) * l.lrScale
	for _, pt := range l.pts {
		cd := pt.g[l.lay.drift]
		if !(cd > 0) || lr <= 0 {
			continue
		}
		f := 1 / (1 + 2*lr*cd)
		for i, x := range pt.dir {
			pt.dir[i] = float32(float64(x) * f)
		}
		pt.info.Phi *= f
		pt.info.VNorm *= f
	}
}

// pendingUpd returns the update the pending step made in place of its
// optimizer's own (nil: none).
func (pt *point) pendingUpd() []float32 {
	if pt.pendHasUpd {
		return pt.pendUpd
	}
	return nil
}

// evaluate computes every point's losses (and J when withJac) on batch.
func (l *loop) evaluate(batch Batch, withJac bool) (*bad, error) {
	for _, pt := range l.pts {
		pt.giveBack()
	}
	nonFinite := make([]error, len(l.pts))
	err := l.parallel(func(k int) error {
		pt := l.pts[k]
		if err := pt.evaluate(l.lay, batch, withJac); err != nil {
			if errors.Is(err, png.ErrNonFinite) {
				// A problem may report a non-finite loss as an error
				// rather than a value: that is a bad step to roll back,
				// not a failure.
				nonFinite[k] = err
				return nil
			}
			return fmt.Errorf("finetune: step %d, model %d: evaluate: %w", l.step+1, k, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, e := range nonFinite {
		if e != nil {
			return &bad{model: k, what: "loss", err: e}, nil
		}
	}
	for k, pt := range l.pts {
		if !finite64(pt.x) {
			return &bad{model: k, what: "loss"}, nil
		}
		if withJac && (!finite32(pt.jac.Data) || !finite32(pt.tjac.Data)) {
			return &bad{model: k, what: "gradient"}, nil
		}
	}
	for k, pt := range l.pts {
		if d := l.diverged(pt); d != nil {
			d.Model = k
			return &bad{model: k, what: "loss", div: d}, nil
		}
	}
	return nil, nil
}

// diverged returns a *DivergedError (Model, Step and Retries to be filled
// in) when one of pt's losses exceeds ℓ_i(0) + ρ·max_j |ℓ_j(0)|, nil
// otherwise or before the first step's losses are known.
func (l *loop) diverged(pt *point) *DivergedError {
	if l.s.DivergeFactor < 0 || pt.initLosses == nil {
		return nil
	}
	var scale float64
	for _, x := range pt.initLosses {
		scale = math.Max(scale, math.Abs(x))
	}
	if scale == 0 {
		return nil // no scale to be relative to
	}
	for i, x := range pt.losses {
		if bound := pt.initLosses[i] + l.s.DivergeFactor*scale; x > bound {
			return &DivergedError{Task: l.tasks[i], Loss: x, Initial: pt.initLosses[i], Bound: bound}
		}
	}
	return nil
}

// parallel runs f for every point on s.Workers goroutines and returns the
// first error in point order.
func (l *loop) parallel(f func(k int) error) error {
	if l.s.Workers <= 1 || len(l.pts) == 1 {
		for k := range l.pts {
			if err := f(k); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(l.pts))
	sem := make(chan struct{}, l.s.Workers)
	var wg sync.WaitGroup
	for k := range l.pts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[k] = f(k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// commit makes the pending update final, now that the step after it is
// good, and makes this step's update the pending one: the optimizer's
// state takes the pending direction, base becomes the current parameters,
// and dir and the update trade buffers with pendDir and pendUpd (no copy;
// copied into them when lent: ScratchLender).
// The caller then writes into theta the result of the new pending update
// (Settings.applyTheta from base).
func (l *loop) commit() {
	for _, pt := range l.pts {
		if pt.pending {
			l.s.advance(&pt.opt, pt.pendDir)
		}
		if pt.base == nil {
			pt.base = make([]float32, l.n)
		}
		copyVec(pt.base, pt.theta)
		// The pending update's vectors are the loop's own; lent ones go
		// back before the next evaluation (giveBack), so they are copied.
		if pt.pendDir == nil {
			pt.pendDir = make([]float32, l.n)
		}
		if pt.lender != nil {
			copyVec(pt.pendDir, pt.dir)
		} else {
			pt.pendDir, pt.dir = pt.dir, pt.pendDir
		}
		if pt.pendHasUpd = pt.hasUpd; pt.hasUpd {
			switch {
			case pt.lender != nil:
				if pt.pendUpd == nil {
					pt.pendUpd = make([]float32, l.n)
				}
				copyVec(pt.pendUpd, pt.prop)
			default:
				// the update lives in prop's buffer: prop takes the old
				// one's (nil at first: constrain allocates it)
				pt.pendUpd, pt.prop = pt.prop, pt.pendUpd
			}
		}
		pt.pending = true
	}
	l.hasPrev = true
	l.prevStep = l.step
}

// scratch returns b, or when b is nil a buffer of n values (contents
// undefined) lent by the problem (ScratchLender) or allocated.
func (pt *point) scratch(b []float32, n int) []float32 {
	switch {
	case b != nil:
		return b
	case pt.lender != nil:
		return pt.lender.Lend(n)
	}
	return make([]float32, n)
}

// giveBack returns the vectors that live only between two evaluations
// (this step's direction, the proposal, its metric and bound: commit has
// moved what the pending update keeps into pendDir and pendUpd) to the
// problem that lent them, so that its evaluation can use their memory.
func (pt *point) giveBack() {
	if pt.lender == nil {
		return
	}
	for _, b := range []*[]float32{&pt.dir, &pt.prop, &pt.metric, &pt.bound} {
		if *b != nil {
			pt.lender.TakeBack(*b)
			*b = nil
		}
	}
}

// pendingDir is the direction the optimizer's state opt has yet to take
// (nil: none).
func (pt *point) pendingDir() []float32 {
	if pt.pending {
		return pt.pendDir
	}
	return nil
}

// rollback returns to the last good parameters and redoes their update
// with a halved learning rate, until the parameters are finite or the
// retries are spent.
func (l *loop) rollback(b *bad) error {
	for {
		if !l.hasPrev || l.retries >= l.s.MaxRetries {
			if b.div != nil {
				d := *b.div
				d.Step, d.Retries = l.step+1, l.retries
				return &d
			}
			return &NonFiniteError{Step: l.step + 1, Model: b.model, What: b.what, Retries: l.retries, Err: b.err}
		}
		l.retries++
		l.lrScale *= 0.5
		lr := l.s.lrAt(l.prevStep, l.total) * l.lrScale
		ok := true
		for k, pt := range l.pts {
			if !l.s.applyTheta(pt.theta, pt.base, pt.pendDir, pt.pendingUpd(), pt.opt, lr) && ok {
				ok = false
				b = &bad{model: k, what: "parameters"}
			}
		}
		if ok {
			return l.setParams()
		}
	}
}

func (l *loop) setParams() error {
	for k, pt := range l.pts {
		if pt.shared {
			continue // the problem's own vector: nothing to copy
		}
		if err := pt.p.SetParams(pt.theta); err != nil {
			return fmt.Errorf("finetune: step %d, model %d: set parameters: %w", l.step+1, k, err)
		}
	}
	return nil
}

// currentBatch returns the batch at (epoch, pos), copying (or reading)
// its rows once.
func (l *loop) currentBatch() (Batch, error) {
	if l.train.Empty() {
		return nil, nil
	}
	key := [2]int{l.epoch, l.pos}
	if l.haveB && key == l.batchKey {
		return l.batch, nil
	}
	if l.batches == nil {
		l.batches = l.train.Batches(l.s.Seed, l.epoch, l.s.BatchSize)
	}
	b, err := l.train.Take(l.batches[l.pos])
	if err != nil {
		return nil, fmt.Errorf("finetune: step %d: training batch: %w", l.step+1, err)
	}
	l.batch, l.batchKey, l.haveB = b, key, true
	return l.batch, nil
}

// advance moves to the next batch; the last batch is kept for the final
// evaluation.
func (l *loop) advance() {
	if l.train.Empty() {
		return
	}
	l.pos++
	if l.pos == len(l.batches) {
		l.epoch++
		l.pos = 0
		l.batches = nil
	}
}

// validate returns pt's losses over the validation set, the batch losses
// weighted by batch size.
func (l *loop) validate(k int, pt *point) ([]float64, map[string]map[string]float64, error) {
	out := make([]float64, l.m)
	if l.val.Empty() {
		if err := pt.p.Evaluate(nil, out, nil); err != nil {
			return nil, nil, fmt.Errorf("finetune: validation after step %d: %w", l.step, err)
		}
		return out, nil, nil
	}
	var meter Meter
	if l.s.ValMeter != nil {
		meter = l.s.ValMeter(k)
	}
	N := l.val.Len()
	tmp := make([]float64, l.m)
	for i := 0; i < N; i += l.s.BatchSize {
		j := min(i+l.s.BatchSize, N)
		b, err := l.val.Rows(i, j)
		if err != nil {
			return nil, nil, fmt.Errorf("finetune: validation after step %d: %w", l.step, err)
		}
		if err := pt.p.Evaluate(b, tmp, nil); err != nil {
			return nil, nil, fmt.Errorf("finetune: validation after step %d, examples %d..%d: %w", l.step, i, j-1, err)
		}
		if meter != nil {
			if err := meter.Add(b); err != nil {
				return nil, nil, fmt.Errorf("finetune: validation metrics after step %d, examples %d..%d: %w", l.step, i, j-1, err)
			}
		}
		for t := range out {
			out[t] += tmp[t] * float64(j-i) / float64(N)
		}
	}
	if meter != nil {
		return out, meter.Result(), nil
	}
	return out, nil, nil
}

func (l *loop) stepRecord(lr float64) *Step {
	st := &Step{Step: l.step, Epoch: l.batchKey[0], F: l.F, LR: lr, Retries: l.retries, Elapsed: time.Since(l.start), Direction: l.dirTime}
	for _, pt := range l.pts {
		st.Points = append(st.Points, Point{Losses: pt.losses, Terms: pt.terms, Drift: pt.driftValue(l.lay), F: pt.f, Info: pt.info, Metric: pt.minfo, DLoss: pt.dloss})
	}
	return st
}

// finish evaluates the final parameters and builds the result.
func (l *loop) finish() (*Result, error) {
	batch := l.batch
	if l.train.Empty() {
		batch = nil
	} else if !l.haveB {
		var err error
		if batch, err = l.currentBatch(); err != nil {
			return l.fail(err)
		}
	}
	b, err := l.evaluate(batch, true)
	if err != nil {
		return l.fail(err)
	}
	if b != nil && b.div != nil {
		d := *b.div
		d.Step = l.step
		return l.fail(&d)
	}
	if b != nil {
		return l.fail(&NonFiniteError{Step: l.step, Model: b.model, What: b.what + " at the final parameters"})
	}
	if l.F, err = l.obj.eval(l.L, l.coefs, l.perF); err != nil {
		return l.fail(fmt.Errorf("finetune: criterion at the final parameters: %w", err))
	}
	res := l.result(StepLimit)
	K := make([]float64, l.m*l.m)
	for k, pt := range l.pts {
		png.Gram(K, pt.jac, 0)
		_, res.Points[k].G = png.MinNorm(K, l.m)
		if l.val != nil {
			if res.Points[k].ValLosses, res.Points[k].ValMetrics, err = l.validate(k, pt); err != nil {
				return l.fail(err)
			}
		}
	}
	return res, nil
}

func (l *loop) result(status Status) *Result {
	res := &Result{Status: status, Steps: l.step, Tasks: l.tasks, F: l.F, InitialF: l.initF, Checkpoint: l.lastCkpt, CheckpointErr: l.ckptErr}
	for k, pt := range l.pts {
		res.Points = append(res.Points, PointResult{
			Params:        pt.resultParams(),
			Losses:        append([]float64(nil), pt.losses...),
			Terms:         slices.Clone(pt.terms),
			Drift:         pt.driftValue(l.lay),
			InitialLosses: pt.initLosses,
			F:             l.perF[k],
			InitialF:      pt.initF,
			G:             pt.info.G,
		})
	}
	return res
}

// resultParams is the parameters a Result reports: the problem's own
// vector when the loop trained it in place (SharedParams: the problem
// holds them, and a second copy of θ would be the run's largest
// allocation after its end), else a copy of the loop's.
func (pt *point) resultParams() []float32 {
	if pt.shared {
		return pt.theta
	}
	return append([]float32(nil), pt.theta...)
}

func (l *loop) fail(err error) (*Result, error) { return l.result(Failed), err }

func (l *loop) interrupt(cause error) (*Result, error) {
	ie := &InterruptedError{Step: l.step, Err: cause}
	if l.s.CheckpointPath != "" {
		if err := l.checkpoint(); err != nil {
			return l.result(Interrupted), errors.Join(ie, err)
		}
		ie.Checkpoint = l.s.CheckpointPath
	}
	return l.result(Interrupted), ie
}

// firstOrderChange returns J·(after − before) in dst (reallocated to m
// values when too short): the first-order change ∇ℓ_iᵀΔθ of every task
// loss under the update that moved before to after.
func firstOrderChange(dst []float64, J png.Jacobian, before, after []float32) []float64 {
	if cap(dst) < J.M {
		dst = make([]float64, J.M)
	}
	dst = dst[:J.M]
	row := func(i int) { dst[i] = stepvec.DeltaDot(J.Row(i), before, after) }
	if J.N < 2*minSpan {
		for i := range dst {
			row(i)
		}
		return dst
	}
	// one row per worker: each sum runs on one core, in an order fixed by
	// the length alone
	par.For(J.M, row)
	return dst
}

// norm returns the Euclidean length of c.
func norm(c []float64) float64 {
	var ss float64
	for _, v := range c {
		ss += v * v
	}
	return math.Sqrt(ss)
}

// normalize scales c to unit Euclidean length (a zero c is left alone).
func normalize(c []float64) {
	if n := norm(c); n > 0 {
		r := 1 / n
		for i := range c {
			c[i] *= r
		}
	}
}

func finite64(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// finite32 reports whether every value of x is finite, checking spans of
// a long x on the worker pool.
func finite32(x []float32) bool {
	if len(x) < 2*minSpan {
		return stepvec.Finite(x)
	}
	var nonFinite atomic.Bool
	spans(len(x), func(lo, hi int) {
		if !stepvec.Finite(x[lo:hi]) {
			nonFinite.Store(true)
		}
	})
	return !nonFinite.Load()
}
