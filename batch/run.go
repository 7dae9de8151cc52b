package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/job"
)

// Resolver turns a job's keys into its configuration: a *job.TuneConfig,
// *job.FrontConfig or *job.EvalConfig for the kinds tune, front and eval.
// Errors name the key.
type Resolver func(j *Job) (any, error)

// Runner runs a batch's jobs in one process.
type Runner struct {
	OutDir string
	// Workers jobs run at once (at least 1).
	Workers int
	// Shard I of Shards runs the jobs k with k mod Shards = I; Shards 0
	// runs every job.
	Shard, Shards int
	// RetryFailed reruns failed jobs; otherwise they stay failed.
	RetryFailed bool
	Resolve     Resolver
	// FrontPlot, when set, draws each front job's front.png.
	FrontPlot job.FrontPlotFunc
	// Log receives one line per job started, finished, failed or skipped.
	Log io.Writer
	// Extra recorders follow every tune and front job's training loop.
	Extra []finetune.Recorder
	// Loader, when set, reads the jobs' models and data (Run and Check
	// make their own otherwise).
	Loader *job.Loader
}

// loader is r.Loader or a new one.
func (r *Runner) loader() *job.Loader {
	if r.Loader != nil {
		return r.Loader
	}
	return job.NewLoader()
}

// Summary counts what a run did with the jobs of its shard.
type Summary struct {
	Jobs        int `json:"jobs"`
	Done        int `json:"done"`    // finished in this run
	Skipped     int `json:"skipped"` // done before
	Failed      int `json:"failed"`  // failed in this run, or before (without RetryFailed)
	Running     int `json:"running"` // held by another process
	Interrupted int `json:"interrupted"`
}

// prepared is a job ready to run.
type prepared struct {
	run     func(ctx context.Context, timer finetune.Recorder) (any, error)
	files   map[string]string
	ckpt    string
	resumed bool
	// warnings are Prepare's (tied parameters and such).
	warnings []string
}

// Run validates the jobs (every job's keys; the model and data of every
// job this shard will run), writes the manifest, then runs this shard's
// jobs that are not done on Workers goroutines. It returns an error when
// validation fails (before any job starts) or when some job failed or
// was interrupted.
func (r *Runner) Run(ctx context.Context, file string, jobs []Job) (*Summary, error) {
	if r.Workers < 1 {
		return nil, fmt.Errorf("--workers %d: want at least 1", r.Workers)
	}
	if r.Shards > 0 && (r.Shard < 0 || r.Shard >= r.Shards) {
		return nil, fmt.Errorf("--shard %d/%d: want 0 ≤ I < N", r.Shard, r.Shards)
	}
	cfgs, err := r.resolveAll(jobs)
	if err != nil {
		return nil, err
	}
	sum := &Summary{}
	var todo []int
	for i, j := range jobs {
		if !inShard(i, r.Shard, r.Shards) {
			continue
		}
		sum.Jobs++
		switch st := StateOf(r.OutDir, j); st.State {
		case StateDone:
			sum.Skipped++
			r.logf("skip %s: done", j.ID)
			continue
		case StateRunning:
			sum.Running++
			r.logf("skip %s: running elsewhere (%s)", j.ID, st.Where)
			continue
		case StateFailed:
			if !r.RetryFailed {
				sum.Failed++
				r.logf("skip %s: failed before (--retry-failed reruns it): %s", j.ID, st.Error)
				continue
			}
		default:
			if st.Invalid != "" {
				r.logf("rerun %s: its result does not count: %s", j.ID, st.Invalid)
			}
		}
		todo = append(todo, i)
	}
	// Validation: the model and data of every job to run are loaded and
	// checked, each file once.
	loader := r.loader()
	if err := r.check(loader, jobs, cfgs, todo); err != nil {
		return nil, err
	}
	if err := r.writeManifest(file, jobs); err != nil {
		return nil, err
	}
	started := time.Now()

	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range r.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				o := r.runOne(ctx, loader, &jobs[i], cfgs[i], started)
				mu.Lock()
				switch o {
				case ranDone:
					sum.Done++
				case ranFailed, failedElsewhere:
					sum.Failed++
				case ranInterrupted:
					sum.Interrupted++
				case runningElsewhere:
					sum.Running++
				case doneElsewhere:
					sum.Skipped++
				}
				mu.Unlock()
			}
		}()
	}
dispatch:
	for _, i := range todo {
		select {
		case work <- i:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	switch {
	case sum.Interrupted > 0 || ctx.Err() != nil:
		return sum, fmt.Errorf("interrupted: %d jobs done, %d interrupted (rerun to resume them from their checkpoints)", sum.Done, sum.Interrupted)
	case sum.Failed > 0:
		return sum, fmt.Errorf("%d of %d jobs failed (see %s in their folders)", sum.Failed, sum.Jobs, ErrorFile)
	}
	if sum.Running > 0 {
		r.logf("%d jobs are running in another process: this one does not wait for them (batch status shows them; a rerun picks up any that process leaves unfinished)", sum.Running)
	}
	return sum, nil
}

// Check resolves every job and prepares it as Run would (model and data
// loaded and checked, each file once), without running any: the checks a
// cluster's array tasks would otherwise make only once they start.
func (r *Runner) Check(jobs []Job) error {
	cfgs, err := r.resolveAll(jobs)
	if err != nil {
		return err
	}
	all := make([]int, len(jobs))
	for i := range all {
		all[i] = i
	}
	return r.check(r.loader(), jobs, cfgs, all)
}

// progressFrom is the number of jobs from which Run and Check report on
// Log what they are checking: one line before, then a count every tenth
// of the jobs whose models and data are checked.
const progressFrom = 100

// resolveAll resolves every job's keys; the error lists every bad job.
func (r *Runner) resolveAll(jobs []Job) ([]any, error) {
	if len(jobs) >= progressFrom {
		r.logf("checking %d jobs: their keys, then the models and data of those to run…", len(jobs))
	}
	var errs []error
	cfgs := make([]any, len(jobs))
	for i := range jobs {
		cfg, err := r.Resolve(&jobs[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s (%s): %w", jobs[i].ID, jobs[i].Where, err))
		}
		cfgs[i] = cfg
	}
	return cfgs, errors.Join(errs...)
}

// check prepares the jobs idx through l and logs each distinct warning
// once; the error lists every bad job.
func (r *Runner) check(l *job.Loader, jobs []Job, cfgs []any, idx []int) error {
	var errs []error
	warned := map[string]bool{}
	step := 0
	if len(idx) >= progressFrom {
		step = (len(idx) + 9) / 10
	}
	for k, i := range idx {
		if step > 0 && k > 0 && k%step == 0 {
			r.logf("checked %d of %d jobs", k, len(idx))
		}
		p, err := r.prepare(l, &jobs[i], cfgs[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s (%s): %w", jobs[i].ID, jobs[i].Where, err))
			continue
		}
		for _, w := range p.warnings {
			if !warned[w] {
				warned[w] = true
				r.logf("warning (job %s and maybe others): %s", jobs[i].ID, w)
			}
		}
	}
	if step > 0 {
		r.logf("checked %d of %d jobs: %d failed their checks", len(idx), len(idx), len(errs))
	}
	return errors.Join(errs...)
}

// inShard reports whether job k belongs to shard i of n (k mod n = i);
// with n = 0 every job does.
func inShard(k, i, n int) bool { return n == 0 || k%n == i }

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

// prepare points the job's outputs into its folder and prepares it.
func (r *Runner) prepare(l *job.Loader, j *Job, cfg any) (*prepared, error) {
	dir := filepath.Join(r.OutDir, j.ID)
	ckpt := filepath.Join(dir, CheckpointFn)
	p := &prepared{ckpt: ckpt, files: map[string]string{}}
	rel := func(name string) string { return filepath.Join(j.ID, name) }
	resume := ""
	if exists(ckpt) {
		resume, p.resumed = ckpt, true
	}
	switch c := cfg.(type) {
	case *job.TuneConfig:
		cc := *c
		cc.Out, cc.Force, cc.Log, cc.Checkpoint, cc.Resume = filepath.Join(dir, ModelFile), true, filepath.Join(dir, LogFile), ckpt, resume
		cc.MakeFolders = true // runOne creates the job's folder
		t, err := cc.Prepare(l)
		if err != nil {
			return nil, err
		}
		p.warnings = t.Warnings
		p.files["model"], p.files["log"] = rel(ModelFile), rel(LogFile)
		p.run = func(ctx context.Context, timer finetune.Recorder) (any, error) {
			t.Extra = append(append(t.Extra, timer), r.Extra...)
			return t.Run(ctx)
		}
	case *job.FrontConfig:
		cc := *c
		cc.OutDir, cc.Force, cc.Log, cc.Checkpoint, cc.Resume = dir, true, filepath.Join(dir, LogFile), ckpt, resume
		cc.MakeFolders = true // runOne creates the job's folder
		f, err := cc.Prepare(l)
		if err != nil {
			return nil, err
		}
		f.Plot, p.warnings = r.FrontPlot, f.Warnings
		p.files["report"], p.files["log"] = rel("report.json"), rel(LogFile)
		if cc.Problem == "" { // synthetic problems write no models
			for k := range cc.Models {
				p.files[fmt.Sprintf("model_%d", k)] = rel(fmt.Sprintf("model_%d.onnx", k))
			}
		}
		p.run = func(ctx context.Context, timer finetune.Recorder) (any, error) {
			return f.Run(ctx, append([]finetune.Recorder{timer}, r.Extra...)...)
		}
	case *job.EvalConfig:
		cc := *c
		e, err := cc.Prepare(l)
		if err != nil {
			return nil, err
		}
		p.run = func(context.Context, finetune.Recorder) (any, error) { return e.Run() }
	default:
		return nil, fmt.Errorf("kind %s: the resolver gave a %T", j.Kind, cfg)
	}
	return p, nil
}

// outcome is what runOne did with a job.
type outcome int

const (
	notStarted       outcome = iota // ctx was cancelled before it started: it stays pending
	ranDone                         // ran to its result
	ranFailed                       // ran and failed
	ranInterrupted                  // ran, was interrupted: pending, resumes from its checkpoint
	runningElsewhere                // another process holds its lock
	doneElsewhere                   // another process finished it since the scan
	failedElsewhere                 // another process failed it since the scan (or it failed before, without RetryFailed)
)

// writeManifest writes the out folder's manifest while holding its lock
// (ManifestLock), so that processes starting together write it one
// after the other.
func (r *Runner) writeManifest(file string, jobs []Job) error {
	if err := os.MkdirAll(r.OutDir, 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	lk, err := lockWait(filepath.Join(r.OutDir, ManifestLock))
	if err != nil {
		return fmt.Errorf("--out-dir: %w", err)
	}
	defer lk.Close()
	return WriteManifest(r.OutDir, file, jobs)
}

// runOne runs job j in its folder while holding its lock. A job whose
// lock another process holds is left to it; once the lock is taken, the
// job's state is read again, so a job another process finished or failed
// (after started, when this process began running jobs) since the scan is
// not run a second time.
func (r *Runner) runOne(ctx context.Context, l *job.Loader, j *Job, cfg any, started time.Time) outcome {
	if ctx.Err() != nil {
		return notStarted
	}
	start := time.Now()
	dir := filepath.Join(r.OutDir, j.ID)
	fail := func(err error) outcome {
		if ctx.Err() != nil {
			var ie *finetune.InterruptedError
			where := ""
			if errors.As(err, &ie) && ie.Checkpoint != "" {
				where = fmt.Sprintf("; checkpoint at step %d", ie.Step)
			}
			r.logf("interrupted %s%s", j.ID, where)
			return ranInterrupted
		}
		msg := fmt.Sprintf("job %s (%s): %v\n", j.ID, j.Where, err)
		if werr := job.WriteFile(filepath.Join(dir, ErrorFile), []byte(msg)); werr != nil {
			r.logf("failed %s: %v (and writing %s: %v)", j.ID, err, ErrorFile, werr)
		} else {
			r.logf("failed %s: %v", j.ID, err)
		}
		return ranFailed
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	lk, err := tryLock(filepath.Join(dir, LockFile))
	if err != nil {
		return fail(err)
	}
	if lk == nil {
		r.logf("skip %s: running elsewhere (%s)", j.ID, StateOf(r.OutDir, *j).Where)
		return runningElsewhere
	}
	defer lk.Close()
	switch st := StateOf(r.OutDir, *j); {
	case st.State == StateDone:
		r.logf("skip %s: done elsewhere", j.ID)
		return doneElsewhere
	case st.State == StateFailed && (!r.RetryFailed || modifiedSince(filepath.Join(dir, ErrorFile), started)):
		r.logf("skip %s: failed elsewhere: %s", j.ID, st.Error)
		return failedElsewhere
	}
	os.Remove(filepath.Join(dir, ErrorFile))
	if err := job.WriteFile(filepath.Join(dir, RunningFile), []byte(marker())); err != nil {
		return fail(err)
	}
	defer os.Remove(filepath.Join(dir, RunningFile))
	if err := writeJSON(filepath.Join(dir, ConfigFile), map[string]any{"job": j, "config": cfg}); err != nil {
		return fail(err)
	}
	p, err := r.prepare(l, j, cfg)
	if err != nil {
		return fail(err)
	}
	r.logf("start %s", j.ID)
	timer := &loopTimer{}
	recs := []finetune.Recorder{timer}
	if p.resumed {
		recs = append(recs, &logTrimmer{path: filepath.Join(dir, LogFile)})
	}
	out, err := p.run(ctx, finetune.Multi(recs...))
	if err != nil {
		return fail(err)
	}
	res := &Result{ID: j.ID, Name: j.Name, Kind: j.Kind, Keys: j.Keys, Files: p.files, Outcome: out,
		TrainSeconds: timer.seconds(), Resumed: p.resumed}
	fillResult(res, out)
	res.Seconds = time.Since(start).Seconds()
	if err := writeJSON(filepath.Join(dir, ResultFile), res); err != nil {
		return fail(err)
	}
	os.Remove(p.ckpt)
	r.logf("done %s: %d steps, %.2f s (loop %.2f s)", j.ID, res.Steps, res.Seconds, res.TrainSeconds)
	return ranDone
}

// modifiedSince reports whether the file at path was modified at or
// after t.
func modifiedSince(path string, t time.Time) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.ModTime().Before(t)
}
