package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/job"
)

// TestReportEscapesNames: task names, key values and error texts come
// from jobs files and models; report.html shows them as text, never as
// markup, in the table and in the plots.
func TestReportEscapesNames(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	dir := t.TempDir()
	tasks := []string{evil + "a", "b&<i>", "c"}
	var jobs []Job
	for k := 0; k < 4; k++ {
		j := Job{Index: k, Name: "j", Kind: KindTune, Keys: map[string][]string{"seed": {string(rune('0' + k))}, "model": {evil + string(rune('0'+k)) + ".onnx"}}}
		j.ID, _ = jobID(j)
		jobs = append(jobs, j)
		if err := os.MkdirAll(filepath.Join(dir, j.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		if k == 3 {
			if err := os.WriteFile(filepath.Join(dir, j.ID, ErrorFile), []byte(`task "`+evil+`": loss is NaN`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		F, g := job.Num(k), job.Num(0.01)
		res := Result{ID: j.ID, Name: j.Name, Kind: j.Kind, Keys: j.Keys, Tasks: tasks,
			Losses: map[string]job.Num{tasks[0]: job.Num(k + 1), tasks[1]: job.Num(3 - k), tasks[2]: job.Num(k % 2)},
			F:      &F, G: &g, Steps: 1, Seconds: 1,
			Files: map[string]string{"model": filepath.Join(j.ID, ModelFile), "log": filepath.Join(j.ID, LogFile)}}
		if err := writeJSON(filepath.Join(dir, j.ID, ResultFile), res); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(dir, "jobs.yaml", jobs); err != nil {
		t.Fatal(err)
	}
	col, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(col.Files["html"])
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, raw := range []string{"<script>alert", "<i>"} {
		if strings.Contains(html, raw) {
			t.Errorf("report.html holds %s raw", raw)
		}
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;a") || !strings.Contains(html, "b&amp;&lt;i&gt;") {
		t.Errorf("report.html lacks the escaped task names:\n%s", html)
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;0.onnx") {
		t.Errorf("report.html lacks the escaped model key:\n%s", html)
	}
}
