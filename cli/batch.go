package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/batch"
	"github.com/paretonav/paretonav/finetune"
)

var batchOutDirFlag = &ucli.PathFlag{Name: "out-dir", Usage: "the batch's folder `DIR`: one folder per job, named by its ID", Category: "Output"}

var batchCommand = &ucli.Command{
	Name:  "batch",
	Usage: "run many tune, front and eval jobs from one YAML file: here, on a Slurm array or a Kubernetes Indexed Job",
	Description: `A jobs file has defaults: (any key a tune, front or eval flag takes; model is
the MODEL.onnx argument) and jobs: (each overriding the defaults, with kind:
tune|front|eval, default tune, and an optional name); matrix: (in defaults or a
job) maps keys to lists and expands to their cross product. For the model of
"paretonav models lenet2 --out lenet2.onnx" and the data of "paretonav data
multimnist --out train.npz" (and --split test --out val.npz):

  defaults:
    model: lenet2.onnx
    data: train.npz
    task: [left:nll:logp_left:left, right:nll:logp_right:right]
  jobs:
    - name: wd
      val: val.npz
      steps: 200
      matrix:
        criterion: ["wd:0.2,0.4", "wd:0.3,0.3"]
        seed: [1, 2, 3]
    - {name: base, kind: eval, data: val.npz}

Relative paths in the jobs file (model, data, any path) are relative to its
folder. A jobs file is a regular file of at most 16 MiB expanding to at most
10,000 jobs. Every job gets an ID (its name and a short hash of its keys) and a folder
DIR/ID with its resolved configuration (config.json), log.jsonl, its models and,
written last, result.json. Job k belongs to shard k mod N.`,
	Subcommands: []*ucli.Command{
		withInterspersed(&ucli.Command{
			Name:      "run",
			Usage:     "run the jobs (or one shard of them) here, skipping those done and resuming interrupted ones",
			ArgsUsage: "JOBS.yaml",
			Description: `Every job is checked before the first starts (its keys, criteria, model and
data files, tasks against the model). A job whose result.json exists is
skipped; an interrupted job resumes from its checkpoint; a failing job writes
DIR/ID/error.txt and the others go on; failed jobs stay failed unless
--retry-failed. SIGINT or SIGTERM: running jobs checkpoint and stop. The exit
status is non-zero if any job failed or was interrupted.`,
			Flags: []ucli.Flag{
				batchOutDirFlag,
				&ucli.IntFlag{Name: "workers", Value: 1, Usage: "run `W` jobs at once", Category: "Run"},
				&ucli.StringFlag{Name: "shard", Usage: "run only shard `I/N`: the jobs k with k mod N = I", Category: "Run"},
				&ucli.BoolFlag{Name: "retry-failed", Usage: "rerun the jobs that failed before", Category: "Run"},
				jsonFlag,
			},
			Action: runBatchRun,
		}),
		withInterspersed(&ucli.Command{
			Name:      "status",
			Usage:     "how many jobs are done, running, failed and pending (each job with --json)",
			ArgsUsage: "DIR",
			Flags:     []ucli.Flag{jsonFlag},
			Action:    runBatchStatus,
		}),
		withInterspersed(&ucli.Command{
			Name:      "collect",
			Usage:     "gather the results into DIR/results.csv, results.json and report.html",
			ArgsUsage: "DIR",
			Description: `One row per job: ID, name, kind, status, the keys that vary across jobs, the
final task losses, F, g, metrics, steps, seconds, and whether the job is
non-dominated in loss space among the done jobs. report.html is one
self-contained page: the jobs in loss space (every pair of tasks; parallel
coordinates for 3 or more), the non-dominated ones highlighted, and a sortable
table linking each job's model and log.`,
			Flags:  []ucli.Flag{jsonFlag},
			Action: runBatchCollect,
		}),
		withInterspersed(&ucli.Command{
			Name:      "slurm",
			Usage:     "write a Slurm job array script running the jobs in N shards (and submit it with --submit)",
			ArgsUsage: "JOBS.yaml",
			Flags: []ucli.Flag{
				batchOutDirFlag,
				&ucli.IntFlag{Name: "shards", Usage: "split the jobs over `N` array tasks (--array=0-(N-1); required)", Category: "Slurm"},
				&ucli.StringFlag{Name: "partition", Usage: "the `PARTITION` to run on", Category: "Slurm"},
				&ucli.StringFlag{Name: "time", Usage: "time limit per array task, as Slurm takes it (`T`, e.g. 2:00:00)", Category: "Slurm"},
				&ucli.IntFlag{Name: "cpus", Usage: "CPUs per array task `C` (--cpus-per-task)", DefaultText: "the partition's", Category: "Slurm"},
				&ucli.StringFlag{Name: "mem", Usage: "memory per array task, as Slurm takes it (`M`, e.g. 8G)", Category: "Slurm"},
				&ucli.IntFlag{Name: "workers", Value: 1, Usage: "each array task runs `W` jobs at once", Category: "Slurm"},
				&ucli.GenericFlag{Name: "extra", Value: &lines{}, Usage: "one more #SBATCH `LINE` (repeatable; taken whole, commas included), e.g. --extra '--gres=gpu:1'", Category: "Slurm"},
				&ucli.BoolFlag{Name: "submit", Usage: "submit the script with sbatch and print the job ID", Category: "Slurm"},
			},
			Action: runBatchSlurm,
		}),
		withInterspersed(&ucli.Command{
			Name:      "k8s",
			Usage:     "write a Kubernetes Indexed Job manifest running the jobs in N shards",
			ArgsUsage: "JOBS.yaml",
			Description: `Writes DIR/k8s-job.yaml: an Indexed Job (completionMode Indexed, completions N)
whose pod K runs "paretonav batch run JOBS.yaml --out-dir DIR --shard K/N", K
from JOB_COMPLETION_INDEX. The claim --volume-claim is mounted at --mount, the
pods' working folder: put the jobs file, models and data there and give their
paths relative to it. Apply it with kubectl apply -f DIR/k8s-job.yaml.`,
			Flags: []ucli.Flag{
				batchOutDirFlag,
				&ucli.IntFlag{Name: "shards", Usage: "split the jobs over `N` pods (the Job's completions; required)", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "image", Usage: "container `IMAGE` with paretonav on its PATH", Category: "Kubernetes"},
				&ucli.IntFlag{Name: "parallelism", Usage: "run `P` pods at once", DefaultText: "--shards, all at once", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "volume-claim", Usage: "PersistentVolumeClaim `NAME` shared by the pods (the out folder lives on it)", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "mount", Value: "/data", Usage: "where the claim is mounted: the pods' working `PATH`", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "cpu", Usage: "CPU request and limit per pod (`Q`, e.g. 2)", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "memory", Usage: "memory request and limit per pod (`Q`, e.g. 8Gi)", Category: "Kubernetes"},
				&ucli.StringFlag{Name: "name", Value: "paretonav-batch", Usage: "the Job's `NAME`", Category: "Kubernetes"},
			},
			Action: runBatchK8s,
		}),
	},
}

func init() { register(batchCommand) }

// batchTestRecorder, when set (by tests), follows every batch job's loop.
var batchTestRecorder finetune.Recorder

// batchReserved are the keys a batch job may not set: batch points every
// output into the job's folder.
var batchReserved = []string{"out", "out-dir", "force", "log", "csv", "plot", "checkpoint", "resume", "json", "config"}

// batchResolver resolves the jobs of the jobs file file (resolveBatchJob),
// relative paths in it taken relative to the file's folder, made absolute
// so that a job's resolved configuration holds where its files are.
func batchResolver(file string) batch.Resolver {
	base, err := filepath.Abs(filepath.Dir(file))
	return func(j *batch.Job) (any, error) {
		if err != nil {
			return nil, err
		}
		return resolveBatchJob(j, base)
	}
}

// resolveBatchJob resolves a job's keys with the flags of the command its
// kind names, as --config would: the same defaults, types and checks.
// Relative paths (the model, path flags, data sources) are relative to the
// folder base.
func resolveBatchJob(j *batch.Job, base string) (any, error) {
	cmd := map[string]*ucli.Command{batch.KindTune: tuneCommand, batch.KindFront: frontCommand, batch.KindEval: evalCommand}[j.Kind]
	if cmd == nil {
		return nil, fmt.Errorf("key kind: %q, want tune, front or eval", j.Kind)
	}
	keys := maps.Clone(j.Keys)
	var args []string
	for _, m := range keys["model"] {
		args = append(args, joinPath(base, m))
	}
	delete(keys, "model")
	for _, k := range batchReserved {
		if _, ok := keys[k]; ok {
			return nil, fmt.Errorf("key %s: set by batch (every job writes into its own folder DIR/ID)", k)
		}
	}
	set := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range cmd.Flags {
		if err := f.Apply(set); err != nil {
			return nil, err
		}
	}
	if err := set.Parse(append([]string{"--"}, args...)); err != nil {
		return nil, err
	}
	c := ucli.NewContext(NewApp(), set, nil)
	c.Command = cmd
	if err := applyValues(c, "jobs file", base, keys); err != nil {
		return nil, err
	}
	switch j.Kind {
	case batch.KindTune:
		return tuneConfigFromFlags(c)
	case batch.KindFront:
		return frontConfigFromFlags(c), nil
	default:
		if len(args) != 1 {
			return nil, fmt.Errorf("key model: want one MODEL.onnx, got %d", len(args))
		}
		return evalConfigFromFlags(c, args[0]), nil
	}
}

// batchJobs reads the jobs file, the one argument of c, and checks every
// job's keys.
func batchJobs(c *ucli.Context) (string, []batch.Job, error) {
	file, err := oneArg(c, "JOBS.yaml")
	if err != nil {
		return "", nil, err
	}
	jobs, err := batch.LoadFile(file)
	if err != nil {
		return "", nil, err
	}
	var errs []error
	for i := range jobs {
		if _, err := batchResolver(file)(&jobs[i]); err != nil {
			errs = append(errs, fmt.Errorf("job %s (%s): %w", jobs[i].ID, jobs[i].Where, err))
		}
	}
	return file, jobs, errors.Join(errs...)
}

// oneArg returns the command's one positional argument, what.
func oneArg(c *ucli.Context, what string) (string, error) {
	args := positional(c)
	if len(args) != 1 {
		return "", fmt.Errorf("batch %s: want one %s argument, got %d (%s)", c.Command.Name, what, len(args), strings.Join(args, " "))
	}
	return args[0], nil
}

// outDir reads --out-dir, required.
func outDir(c *ucli.Context) (string, error) {
	dir := c.Path(batchOutDirFlag.Name)
	if dir == "" {
		return "", errors.New("--out-dir: required (the batch's folder)")
	}
	return dir, nil
}

// parseShard reads --shard I/N ("" is every job: 0, 0).
func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 ≤ I < N, e.g. 0/4", s)
	}
	return i, n, nil
}

func runBatchRun(c *ucli.Context) error {
	dir, err := outDir(c)
	if err != nil {
		return err
	}
	shard, shards, err := parseShard(c.String("shard"))
	if err != nil {
		return err
	}
	file, err := oneArg(c, "JOBS.yaml")
	if err != nil {
		return err
	}
	jobs, err := batch.LoadFile(file)
	if err != nil {
		return err
	}
	r := &batch.Runner{OutDir: dir, Workers: c.Int("workers"), Shard: shard, Shards: shards,
		RetryFailed: c.Bool("retry-failed"), Resolve: batchResolver(file), FrontPlot: plotFront, Log: c.App.ErrWriter}
	if batchTestRecorder != nil {
		r.Extra = append(r.Extra, batchTestRecorder)
	}
	ctx, stop := signalContext(c)
	defer stop()
	sum, err := r.Run(ctx, file, jobs)
	if sum != nil {
		if c.Bool(jsonFlag.Name) {
			if jerr := writeJSON(c.App.Writer, sum); jerr != nil {
				return errors.Join(err, jerr)
			}
		} else {
			fmt.Fprintf(c.App.Writer, "%d jobs: %d done now, %d done before, %d failed, %d running elsewhere, %d interrupted\n",
				sum.Jobs, sum.Done, sum.Skipped, sum.Failed, sum.Running, sum.Interrupted)
		}
	}
	return err
}

func runBatchStatus(c *ucli.Context) error {
	dir, err := oneArg(c, "DIR")
	if err != nil {
		return err
	}
	st, err := batch.Status(dir)
	if err != nil {
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, st)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%d jobs: %d done, %d running, %d failed, %d pending\n", len(st.Jobs),
		st.Counts[batch.StateDone], st.Counts[batch.StateRunning], st.Counts[batch.StateFailed], st.Counts[batch.StatePending])
	for _, j := range st.Jobs {
		if j.State == batch.StateDone {
			continue
		}
		extra := j.Error + j.Where
		if j.Checkpoint != "" {
			extra = "resumes from " + j.Checkpoint
		}
		if j.Invalid != "" {
			extra = "its result does not count (" + j.Invalid + "); " + extra
		}
		fmt.Fprintf(w, "  %-8s %s  %s\n", j.State, j.ID, extra)
	}
	return nil
}

func runBatchCollect(c *ucli.Context) error {
	dir, err := oneArg(c, "DIR")
	if err != nil {
		return err
	}
	col, err := batch.Collect(dir)
	if err != nil {
		return err
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, col.Files)
	}
	nd := 0
	for _, r := range col.Rows {
		if r.NonDominated {
			nd++
		}
	}
	rows := ""
	if len(col.Rows) != col.Jobs() {
		rows = fmt.Sprintf(" (%d rows: a front job has one per model)", len(col.Rows))
	}
	fmt.Fprintf(c.App.Writer, "%d jobs%s, %d non-dominated; wrote %s, %s and %s\n", col.Jobs(), rows, nd,
		col.Files["csv"], col.Files["json"], col.Files["html"])
	return nil
}

func runBatchSlurm(c *ucli.Context) error {
	dir, err := outDir(c)
	if err != nil {
		return err
	}
	file, jobs, err := batchJobs(c)
	if err != nil {
		return err
	}
	// The submitting host sees the files the array tasks will: check every
	// job now rather than when its task starts.
	if err := (&batch.Runner{OutDir: dir, Resolve: batchResolver(file), Log: c.App.ErrWriter}).Check(jobs); err != nil {
		return err
	}
	o := batch.SlurmOptions{JobsFile: file, OutDir: dir, Shards: c.Int("shards"), Partition: c.String("partition"),
		Time: c.String("time"), CPUs: c.Int("cpus"), Mem: c.String("mem"), Workers: c.Int("workers"), Extra: extraLines(c)}
	script, err := batch.WriteSlurm(o, jobs)
	if err != nil {
		return err
	}
	line := "sbatch " + script
	if !c.Bool("submit") {
		fmt.Fprintln(c.App.Writer, line)
		return nil
	}
	id, err := batch.Submit(script)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s\nsubmitted job %s (%d array tasks); batch status %s\n", line, id, o.Shards, dir)
	return nil
}

func runBatchK8s(c *ucli.Context) error {
	dir, err := outDir(c)
	if err != nil {
		return err
	}
	file, jobs, err := batchJobs(c)
	if err != nil {
		return err
	}
	o := batch.K8sOptions{JobsFile: file, OutDir: dir, Shards: c.Int("shards"), Image: c.String("image"),
		Parallelism: c.Int("parallelism"), VolumeClaim: c.String("volume-claim"), Mount: c.String("mount"),
		CPU: c.String("cpu"), Memory: c.String("memory"), Name: c.String("name")}
	path, err := batch.WriteK8s(o, jobs)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "kubectl apply -f %s\n", filepath.Clean(path))
	return nil
}

// extraLines returns batch slurm's --extra lines, one an occurrence.
func extraLines(c *ucli.Context) []string {
	if l, ok := c.Generic("extra").(*lines); ok && l != nil {
		return *l
	}
	return nil
}
