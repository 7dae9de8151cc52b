package finetune

import (
	"fmt"
	"slices"

	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// checkpoint writes the loop's state to s.CheckpointPath.
func (l *loop) checkpoint() error {
	c := &Checkpoint{
		Job: l.s.CheckpointJob, NumParams: l.n, Tasks: l.tasks, Step: l.step, Epoch: l.epoch, Pos: l.pos, Seed: l.s.Seed,
		LRScale: l.lrScale, InitialF: l.initF, HasPrev: l.hasPrev, PrevStep: l.prevStep,
	}
	for _, pt := range l.pts {
		pc := PointCheckpoint{Params: pt.theta, Opt: pt.opt, PNG: pt.st, InitialLosses: pt.initLosses, InitialF: pt.initF, Start: pt.theta0}
		if pt.pending {
			// The format keeps the state after the last update (Opt) and
			// the one before it (Prev…): the loop holds the latter and
			// the direction that brings it forward.
			pc.Opt = OptState{M: slices.Clone(pt.opt.M), V: slices.Clone(pt.opt.V), T: pt.opt.T}
			l.s.advance(&pc.Opt, pt.pendDir)
			pc.PrevParams, pc.PrevOpt, pc.PrevDir, pc.PrevUpd = pt.base, pt.opt, pt.pendDir, pt.pendingUpd()
		}
		c.Points = append(c.Points, pc)
	}
	if err := WriteCheckpoint(l.s.CheckpointPath, c); err != nil {
		return fmt.Errorf("%w (after step %d)", err, l.step)
	}
	l.lastCkpt = l.s.CheckpointPath
	if cp, ok := l.rec.(Checkpointer); ok {
		if err := cp.Checkpointed(l.step); err != nil {
			return fmt.Errorf("finetune: recorder after the checkpoint of step %d: %w", l.step, err)
		}
	}
	return nil
}

// restore loads the checkpoint at path into the loop and the problems.
func (l *loop) restore(path string) error {
	c, err := ReadCheckpoint(path)
	if err != nil {
		return err
	}
	ps := make([]Problem, len(l.pts))
	for k, pt := range l.pts {
		ps[k] = pt.p
	}
	if err := c.check(path, ps); err != nil {
		return err
	}
	if c.Seed != l.s.Seed {
		return fmt.Errorf("finetune: checkpoint %s was made with seed %d, the settings say %d", path, c.Seed, l.s.Seed)
	}
	l.step, l.epoch, l.pos = c.Step, c.Epoch, c.Pos
	l.lrScale, l.initF, l.hasPrev, l.prevStep = c.LRScale, c.InitialF, c.HasPrev, c.PrevStep
	if !l.train.Empty() && l.pos >= batchesPerEpoch(l.train.Len(), l.s.BatchSize) {
		return fmt.Errorf("finetune: checkpoint %s: batch %d of epoch %d does not exist with %d examples in batches of %d",
			path, l.pos, l.epoch, l.train.Len(), l.s.BatchSize)
	}
	for k, pt := range l.pts {
		pc := c.Points[k]
		copy(pt.theta, pc.Params)
		pt.opt, pt.st = pc.Opt, pc.PNG
		pt.initLosses, pt.initF = pc.InitialLosses, pc.InitialF
		pt.pending = c.HasPrev && len(pc.PrevDir) == l.n
		if pt.pending {
			// The loop keeps the state before the last update and brings
			// it forward when the next one is made (commit); the
			// checkpoint's Opt is that state brought forward.
			pt.base, pt.opt, pt.pendDir = pc.PrevParams, pc.PrevOpt, pc.PrevDir
			pt.pendUpd, pt.pendHasUpd = pc.PrevUpd, pc.PrevUpd != nil
		}
		if pt.theta0 != nil {
			if len(pc.Start) != l.n {
				return fmt.Errorf("finetune: checkpoint %s model %d holds %d start parameters; the criterion reads %s, which needs the %d parameters the run started from",
					path, k, len(pc.Start), criterion.Drift, l.n)
			}
			copy(pt.theta0, pc.Start)
		}
	}
	return l.setParams()
}

// config returns the resolved configuration for the recorders.
func (l *loop) config(multi bool) *Config {
	s := &l.s
	cfg := &Config{
		Kind: "config", Tasks: l.tasks, NumParams: l.n, Models: len(l.pts),
		Criterion: describe(l.obj.c), Terms: l.lay.terms, Drift: l.lay.drift >= 0, Optimizer: s.Optimizer,
		LR: s.LR, LRSchedule: s.LRSchedule, Steps: l.total, StartStep: l.step,
		TrainExamples: l.train.Len(), ValExamples: l.val.Len(), Seed: s.Seed, ValEvery: s.ValEvery,
		CheckpointEvery: s.CheckpointEvery, CheckpointPath: s.CheckpointPath,
		MaxRetries: s.MaxRetries, DivergeFactor: s.DivergeFactor, Workers: s.Workers, Meta: s.Meta,
	}
	describeMethod(cfg, s.Method, len(l.tasks))
	cfg.DirectionAsGradient = s.DirectionAsGradient
	if l.obj.m != nil {
		cfg.Multi, cfg.MultiScale, cfg.MultiTrade = describe(l.obj.m), s.MultiScale, s.MultiTrade
		if l.obj.pm != nil {
			cfg.PerModel = describe(l.obj.pm)
		}
	}
	if !l.train.Empty() {
		cfg.BatchSize = s.BatchSize
	}
	switch s.Optimizer {
	case "adam":
		cfg.Beta1, cfg.Beta2, cfg.Eps = s.Beta1, s.Beta2, s.Eps
	default:
		cfg.Momentum = s.Momentum
	}
	return cfg
}

// describeMethod sets cfg's Method and the method's parameters with
// their defaults resolved (png.Settings' zero fields, Linear's nil
// weights for m tasks), so that the log says what ran rather than what
// was left zero.
func describeMethod(cfg *Config, m png.Method, tasks int) {
	if p, ok := m.(*png.PNG); ok && p != nil {
		m = *p
	}
	if st, ok := m.(png.Staged); ok {
		describeMethod(cfg, st.Then, tasks)
		cfg.FirstMethod, cfg.FirstSteps = describe(st.First), st.Steps
		if _, mgd := st.First.(png.MGD); mgd {
			cfg.FirstMethod = "mgd"
		}
		return
	}
	switch x := m.(type) {
	case png.PNG:
		ps := x.Settings.WithDefaults()
		cfg.Method, cfg.Alpha, cfg.Gamma, cfg.Discount = "png", &ps.Alpha, &ps.Gamma, &ps.Discount
		cfg.ThresholdCap, cfg.MaxTradeoff = ps.ThresholdCap, ps.MaxTradeoff
	case png.MGD, *png.MGD:
		cfg.Method = "mgd"
	case png.Linear:
		cfg.Method, cfg.Weights = "linear", linearWeights(x.Weights, tasks)
	case *png.Linear:
		cfg.Method = "linear"
		if x != nil {
			cfg.Weights = linearWeights(x.Weights, tasks)
		}
	case png.EPO:
		cfg.Method, cfg.Preference = "epo", [][]float64{epoPreference(x, tasks)}
	case png.PerPoint:
		cfg.Method = describe(m)
		if prefs := epoPreferences(x, tasks); prefs != nil {
			cfg.Method, cfg.Preference = "epo", prefs
		}
	default:
		cfg.Method = describe(m)
	}
}

// epoPreference returns e's preference, 1 each when nil.
func epoPreference(e png.EPO, m int) []float64 {
	if e.Preference != nil {
		return append([]float64(nil), e.Preference...)
	}
	out := make([]float64, m)
	for i := range out {
		out[i] = 1
	}
	return out
}

// epoPreferences returns the preference of every model when every method
// of p is EPO, else nil.
func epoPreferences(p png.PerPoint, m int) [][]float64 {
	out := make([][]float64, len(p))
	for k, mk := range p {
		e, ok := mk.(png.EPO)
		if !ok {
			return nil
		}
		out[k] = epoPreference(e, m)
	}
	return out
}

// linearWeights returns a copy of w, or 1/m each when w is nil.
func linearWeights(w []float64, m int) []float64 {
	if w != nil {
		return append([]float64(nil), w...)
	}
	out := make([]float64, m)
	for i := range out {
		out[i] = 1 / float64(m)
	}
	return out
}

// describe names a method or criterion: its String method, else its Go
// type and fields.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprintf("%T%+v", v, v)
}
