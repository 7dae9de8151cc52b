package batch

import (
	"encoding/csv"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/job"
)

// mtanMetrics are the metric names of an MTAN batch (the widest table a
// batch makes here).
var mtanMetrics = []string{"seg/miou", "seg/pixel_acc", "depth/abs_err", "depth/rel_err", "normal/angle_mean",
	"normal/angle_median", "normal/within_11.25", "normal/within_22.5", "normal/within_30"}

// frontBatch writes a batch of three tune jobs (varying criterion and
// seed, with MTAN's nine metrics) and one front job of four models into a
// new folder, and returns it.
func frontBatch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tasks := []string{"seg", "depth", "normal"}
	metrics := func(k int) map[string]job.Num {
		m := map[string]job.Num{}
		for i, n := range mtanMetrics {
			m[n] = job.Num(0.123456789 * float64(i+k+1))
		}
		return m
	}
	var jobs []Job
	add := func(j Job, res Result) {
		j.Index = len(jobs)
		j.ID, _ = jobID(j)
		jobs = append(jobs, j)
		res.ID, res.Name, res.Kind, res.Keys, res.Tasks = j.ID, j.Name, j.Kind, j.Keys, tasks
		for k, f := range res.Files {
			res.Files[k] = filepath.Join(j.ID, f)
		}
		if err := os.MkdirAll(filepath.Join(dir, j.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(filepath.Join(dir, j.ID, ResultFile), res); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 3; k++ {
		F, g := job.Num(1.23456789*float64(k+1)), job.Num(0.000123456789)
		add(Job{Name: "tune_wd", Kind: KindTune, Keys: map[string][]string{"model": {"mtan.onnx"}, "seed": {strconv.Itoa(k)},
			"criterion": {fmt.Sprintf("wd:0.%d,0.5,0.25", k+1)}, "data": {"nyuv2_train.npz"}, "val": {"nyuv2_val.npz"}}},
			Result{Losses: map[string]job.Num{"seg": job.Num(1 + 0.1111111*float64(k)), "depth": job.Num(0.5 - 0.0123456*float64(k)), "normal": job.Num(0.3)},
				F: &F, G: &g, Metrics: metrics(k), Steps: 2000, Seconds: 1234.56789,
				Files:       map[string]string{"model": ModelFile, "log": LogFile},
				Explanation: fmt.Sprintf("F rose 0.1 → 0.%d (seg past its target); g ≤ e at 0%% of the last 100 steps; control on at 2000 of 2000 steps <far>", k+2)})
	}
	var models []job.FrontModel
	files := map[string]string{"log": LogFile}
	for k := 0; k < 4; k++ {
		models = append(models, job.FrontModel{Model: k, Losses: map[string]job.Num{
			"seg": job.Num(0.9 + 0.05*float64(k)), "depth": job.Num(0.6 - 0.05*float64(k)), "normal": job.Num(0.25 + 0.01*float64(k))},
			G: job.Num(0.01), Explanation: &job.Explanation{Short: fmt.Sprintf("g ≤ e at %d%% of the last 100 steps", 10*k)}})
		files[fmt.Sprintf("model_%d", k)] = fmt.Sprintf("model_%d.onnx", k)
	}
	add(Job{Name: "spread", Kind: KindFront, Keys: map[string][]string{"model": {"mtan.onnx"}, "models": {"4"}, "data": {"nyuv2_train.npz"}}},
		Result{Metrics: map[string]job.Num{"front_hv": 0.0123456789, "front_non_dominated": 4}, Steps: 500, Seconds: 99.5,
			Files: files, Outcome: job.FrontOutcome{Tasks: tasks, Models: models}})
	if err := WriteManifest(dir, "jobs.yaml", jobs); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportFrontJobs: a front job has a row per model, each with its
// losses and a link to its model file, and a point per model in the
// loss-space plots; the page's numbers show 4 significant digits.
func TestReportFrontJobs(t *testing.T) {
	dir := frontBatch(t)
	col, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if col.Jobs() != 4 || len(col.Rows) != 7 {
		t.Fatalf("%d jobs, %d rows; want 4 jobs, 7 rows (a front job has one per model)", col.Jobs(), len(col.Rows))
	}
	page, err := os.ReadFile(col.Files["html"])
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for k := 0; k < 4; k++ {
		r := col.Rows[3+k]
		if r.Model == nil || *r.Model != k || len(r.Losses) != 3 {
			t.Errorf("row %d: model %v, losses %v; want model %d with 3 losses", 3+k, r.Model, r.Losses, k)
		}
		link := fmt.Sprintf(`href="%s"`, filepath.Join(r.ID, fmt.Sprintf("model_%d.onnx", k)))
		if !strings.Contains(html, link) {
			t.Errorf("report.html has no link %s", link)
		}
		label := fmt.Sprintf("%s model %d", r.ID, k)
		if !strings.Contains(html, "<title>"+label+"</title>") {
			t.Errorf("report.html has no point %q in the loss-space plots", label)
		}
	}
	// 7 points in each of the 3 panels and as 7 lines in the parallel plot.
	if n := strings.Count(html, "<circle"); n != 3*7 {
		t.Errorf("%d points in the scatter panels, want 21", n)
	}
	cell := regexp.MustCompile(`<td class="num"[^>]*>([^<]*)</td>`)
	for _, m := range cell.FindAllStringSubmatch(html, -1) {
		digits := strings.TrimLeft(strings.NewReplacer(".", "", "-", "").Replace(strings.SplitN(m[1], "e", 2)[0]), "0")
		if len(digits) > 4 {
			t.Errorf("cell %q shows more than 4 significant digits", m[1])
		}
	}
}

// TestReportFitsInBrowser renders report.html of a wide batch (MTAN's
// metrics, a front job) at 1400 px in headless chromium: no horizontal
// scrolling, and the loss-space plot at least 600 px wide. A wrapper page
// reads the report's widths from an iframe.
func TestReportFitsInBrowser(t *testing.T) {
	bin := chromium(t)
	col, err := Collect(frontBatch(t))
	if err != nil {
		t.Fatal(err)
	}
	report, _ := filepath.Abs(col.Files["html"])
	wrap := filepath.Join(filepath.Dir(report), "wrap.html")
	text := `<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="report.html" style="width:1400px;height:900px;border:0"></iframe>
<script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, e = d.documentElement, p = d.querySelector("svg.panel");
  document.body.setAttribute("data-widths", e.scrollWidth + " " + e.clientWidth + " " + (p ? p.getBoundingClientRect().width : 0));
};
</script></body></html>`
	if err := os.WriteFile(wrap, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, "file://"+wrap, "--allow-file-access-from-files", "--dump-dom")
	m := regexp.MustCompile(`data-widths="(\d+) (\d+) ([\d.]+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the wrapper page read no widths:\n%s", dom)
	}
	scroll, _ := strconv.Atoi(string(m[1]))
	client, _ := strconv.Atoi(string(m[2]))
	plot, _ := strconv.ParseFloat(string(m[3]), 64)
	if scroll > client {
		t.Errorf("at 1400 px the page is %d px wide, %d visible: it scrolls sideways", scroll, client)
	}
	if plot < 600 {
		t.Errorf("the loss-space plot is %g px wide, want at least 600", plot)
	}
	if keep := os.Getenv("PARETONAV_KEEP_SCREENSHOT"); keep != "" {
		headless(t, bin, "file://"+report, "--screenshot="+keep, "--window-size=1400,900")
	}
}

// TestCollectExplanations: each tune job's and each front model's run in
// one line reaches results.json, an explanation column of results.csv and
// the page (folded under "why", escaped).
func TestCollectExplanations(t *testing.T) {
	col, err := Collect(frontBatch(t))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := 0; k < 3; k++ {
		want = append(want, fmt.Sprintf("F rose 0.1 → 0.%d (seg past its target); g ≤ e at 0%% of the last 100 steps; control on at 2000 of 2000 steps <far>", k+2))
	}
	for k := 0; k < 4; k++ {
		want = append(want, fmt.Sprintf("g ≤ e at %d%% of the last 100 steps", 10*k))
	}
	if len(col.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(col.Rows), len(want))
	}
	for i, r := range col.Rows {
		if r.Explanation != want[i] {
			t.Errorf("row %d: explanation %q, want %q", i, r.Explanation, want[i])
		}
	}
	f, err := os.Open(col.Files["csv"])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	c := slices.Index(recs[0], "explanation")
	if c < 0 {
		t.Fatalf("results.csv header %v has no explanation column", recs[0])
	}
	for i, rec := range recs[1:] {
		if rec[c] != want[i] {
			t.Errorf("results.csv row %d: explanation %q, want %q", i+1, rec[c], want[i])
		}
	}
	page, err := os.ReadFile(col.Files["html"])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(page), "<summary>why</summary>"+html.EscapeString(w)+"</details>") {
			t.Errorf("report.html lacks %q under why", w)
		}
	}
	if strings.Contains(string(page), "<far>") {
		t.Error("report.html has an explanation unescaped")
	}
}

// TestFillResultExplanation: a tune job's result carries its
// explanation's one-line form.
func TestFillResultExplanation(t *testing.T) {
	var res Result
	fillResult(&res, &job.TuneOutcome{Tasks: []string{"a"}, Explanation: &job.Explanation{Short: "F fell 2 → 1"}})
	if res.Explanation != "F fell 2 → 1" {
		t.Errorf("result's explanation %q, want the outcome's short line", res.Explanation)
	}
}
