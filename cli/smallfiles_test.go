package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paretonav/paretonav/batch"
)

// yamlBomb is a small YAML document whose aliases expand to 10^9
// strings.
func yamlBomb(key string) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 8; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, refs)
	}
	fmt.Fprintf(&b, "%s: [*l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8]\n", key)
	return b.String()
}

// TestConfigAndJobsFileBounds: --config and the jobs file of batch run
// read only a regular file within their limits (4 MiB, 16 MiB):
// /dev/zero, a named pipe with no writer (whose open would block) and a
// file over the limit are refused before they are read, naming the file
// and what it is or the limit; a YAML alias bomb is refused by the parser.
func TestConfigAndJobsFileBounds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("# a comment that never ends: "); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bigConfig := sparse("big-config.yaml", MaxConfigBytes+1)
	bigJobs := sparse("big-jobs.yaml", batch.MaxFileBytes+1)
	bombConfig := write("bomb-config.yaml", yamlBomb("steps"))
	bombJobs := write("bomb-jobs.yaml", yamlBomb("jobs"))
	config := func(p string) []string { return []string{"tune", "m.onnx", "--config", p} }
	jobs := func(p string) []string {
		return []string{"batch", "run", p, "--out-dir", filepath.Join(t.TempDir(), "out")}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"config dev zero", config("/dev/zero"), []string{"--config", "/dev/zero is a character device, not a regular file"}},
		{"config fifo", config(fifo), []string{"--config", fifo + " is a named pipe (FIFO)"}},
		{"config over the limit", config(bigConfig), []string{"--config", bigConfig, "4194305 bytes", "4 MiB limit"}},
		{"config alias bomb", config(bombConfig), []string{"--config", bombConfig, "excessive aliasing"}},
		{"jobs dev zero", jobs("/dev/zero"), []string{"jobs file: /dev/zero is a character device, not a regular file"}},
		{"jobs fifo", jobs(fifo), []string{"jobs file: " + fifo + " is a named pipe (FIFO)"}},
		{"jobs over the limit", jobs(bigJobs), []string{"jobs file: " + bigJobs, "16777217 bytes", "16 MiB limit"}},
		{"jobs alias bomb", jobs(bombJobs), []string{bombJobs, "excessive aliasing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
