package batch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/paretonav/paretonav/job"
)

// SlurmOptions are the settings of a Slurm array script.
type SlurmOptions struct {
	JobsFile string
	OutDir   string
	// Shards array tasks, --array=0-(Shards-1).
	Shards    int
	Partition string
	Time      string
	CPUs      int
	Mem       string
	Workers   int
	// Extra #SBATCH lines ("--gres=gpu:1" or "#SBATCH --gres=gpu:1").
	Extra []string
	// Program is the paretonav executable the tasks run (default: this
	// process's).
	Program string
}

// SlurmLogDir is the folder (in the out folder) of the array tasks'
// output; it must exist before submission, or every task fails.
const SlurmLogDir = "slurm"

// SlurmScript returns the sbatch script of o: an array of o.Shards tasks,
// task I running shard I/N of the jobs file into the out folder, from the
// folder the script was written in. Paths are made absolute.
func SlurmScript(o SlurmOptions) (string, error) {
	if o.Shards < 1 {
		return "", fmt.Errorf("--shards %d: want at least 1 array task", o.Shards)
	}
	if o.Shards > 1000 {
		return "", fmt.Errorf("--shards %d: Slurm's default MaxArraySize allows at most 1000 array tasks", o.Shards)
	}
	if o.Workers < 1 {
		return "", fmt.Errorf("--workers %d: want at least 1", o.Workers)
	}
	if o.CPUs < 0 {
		return "", fmt.Errorf("--cpus %d: want ≥ 1 (or unset)", o.CPUs)
	}
	abs := func(p string) (string, error) { return filepath.Abs(p) }
	jobs, err := abs(o.JobsFile)
	if err != nil {
		return "", err
	}
	dir, err := abs(o.OutDir)
	if err != nil {
		return "", err
	}
	prog := o.Program
	if prog == "" {
		if prog, err = os.Executable(); err != nil {
			return "", err
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=paretonav-batch\n")
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", o.Shards-1)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(dir, SlurmLogDir, "%A_%a.out"))
	if o.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
	}
	if o.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
	}
	if o.CPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", o.CPUs)
	}
	if o.Mem != "" {
		fmt.Fprintf(&b, "#SBATCH --mem=%s\n", o.Mem)
	}
	for _, e := range o.Extra {
		e = strings.TrimSpace(e)
		if strings.ContainsAny(e, "\n\r") {
			return "", fmt.Errorf("--extra %q: one line please", e)
		}
		if !strings.HasPrefix(e, "#SBATCH") {
			e = "#SBATCH " + e
		}
		b.WriteString(e + "\n")
	}
	// The shard count is written in: SLURM_ARRAY_TASK_COUNT is not N when
	// only some indices are resubmitted (--array=2,7).
	fmt.Fprintf(&b, "set -eu\ncd %s\n", shellQuote(wd))
	fmt.Fprintf(&b, "exec %s batch run %s --out-dir %s --workers %d --shard \"${SLURM_ARRAY_TASK_ID}/%d\"\n",
		shellQuote(prog), shellQuote(jobs), shellQuote(dir), o.Workers, o.Shards)
	return b.String(), nil
}

// WriteSlurm writes the out folder's jobs.json, its Slurm log folder and
// batch.sbatch, and returns the script's path.
func WriteSlurm(o SlurmOptions, jobs []Job) (string, error) {
	script, err := SlurmScript(o)
	if err != nil {
		return "", err
	}
	if err := WriteManifest(o.OutDir, o.JobsFile, jobs); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(o.OutDir, SlurmLogDir), 0o755); err != nil {
		return "", fmt.Errorf("--out-dir: %w", err)
	}
	path := filepath.Join(o.OutDir, "batch.sbatch")
	if err := job.WriteFile(path, []byte(script)); err != nil {
		return "", fmt.Errorf("--out-dir: %w", err)
	}
	return path, nil
}

// Submit submits the script with sbatch --parsable and returns the job ID.
func Submit(script string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command("sbatch", "--parsable", script)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("sbatch %s: %v: %s", script, err, strings.TrimSpace(errb.String()))
		}
		return "", fmt.Errorf("sbatch %s: %w (is Slurm installed here?)", script, err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";") // ID;cluster
	if id == "" {
		return "", fmt.Errorf("sbatch %s: printed no job ID", script)
	}
	return id, nil
}

// shellQuote quotes s for bash when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:,@", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
