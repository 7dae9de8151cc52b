package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlurmScript(t *testing.T) {
	dir := t.TempDir()
	o := SlurmOptions{JobsFile: "jobs.yaml", OutDir: filepath.Join(dir, "my runs"), Shards: 5, Partition: "gpu", Time: "2:00:00",
		CPUs: 4, Mem: "8G", Workers: 2, Extra: []string{"--gres=gpu:1", "#SBATCH --qos=low"}, Program: "/opt/pn/paretonav"}
	s, err := SlurmScript(o)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := filepath.Abs("jobs.yaml")
	for _, want := range []string{
		"#!/bin/bash\n",
		"#SBATCH --array=0-4\n",
		"#SBATCH --output=" + filepath.Join(dir, "my runs", "slurm", "%A_%a.out") + "\n",
		"#SBATCH --partition=gpu\n", "#SBATCH --time=2:00:00\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --mem=8G\n",
		"#SBATCH --gres=gpu:1\n", "#SBATCH --qos=low\n",
		"exec /opt/pn/paretonav batch run " + jobs + " --out-dir '" + filepath.Join(dir, "my runs") + "' --workers 2 --shard \"${SLURM_ARRAY_TASK_ID}/5\"\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	// Every #SBATCH line comes before the first command.
	lines := strings.Split(s, "\n")
	seenCmd := false
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "#SBATCH") && seenCmd {
			t.Errorf("#SBATCH line after a command: %q", l)
		}
		seenCmd = seenCmd || (l != "" && !strings.HasPrefix(l, "#"))
	}

	path, err := WriteSlurm(o, []Job{{ID: "a-00000000"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(o.OutDir, SlurmLogDir), filepath.Join(o.OutDir, ManifestFile)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("WriteSlurm: %v", err)
		}
	}

	for _, tc := range []struct {
		edit func(*SlurmOptions)
		want string
	}{
		{func(o *SlurmOptions) { o.Shards = 0 }, "--shards 0"},
		{func(o *SlurmOptions) { o.Shards = 1001 }, "MaxArraySize"},
		{func(o *SlurmOptions) { o.Workers = 0 }, "--workers 0"},
		{func(o *SlurmOptions) { o.Extra = []string{"--a\n--b"} }, "one line"},
	} {
		bad := o
		tc.edit(&bad)
		if _, err := SlurmScript(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", bad, err, tc.want)
		}
	}
}
