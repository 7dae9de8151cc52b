package batch

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/job"
)

// fakeBatch writes a batch of n done tune jobs with three task losses
// (job k: a = k+1, b = n−k, c = (k·5) mod n: none dominates another,
// except job 3, whose losses are all 10·n: every other job dominates it)
// and one failed job into a new folder, and returns it.
func fakeBatch(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var jobs []Job
	for k := 0; k <= n; k++ {
		j := Job{Index: k, Name: "j", Kind: KindTune, Keys: map[string][]string{"seed": {strconv.Itoa(k)}, "model": {"m.onnx"}}}
		j.ID, _ = jobID(j)
		jobs = append(jobs, j)
		if err := os.MkdirAll(filepath.Join(dir, j.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		if k == n {
			if err := os.WriteFile(filepath.Join(dir, j.ID, ErrorFile), []byte("job failed: loss is NaN\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		F, g := job.Num(float64(k)/10), job.Num(0.01)
		losses := map[string]job.Num{"a": job.Num(k + 1), "b": job.Num(n - k), "c": job.Num((k * 5) % n)}
		if k == 3 {
			losses = map[string]job.Num{"a": job.Num(10 * n), "b": job.Num(10 * n), "c": job.Num(10 * n)}
		}
		res := Result{ID: j.ID, Name: j.Name, Kind: j.Kind, Keys: j.Keys, Tasks: []string{"a", "b", "c"},
			Losses: losses,
			F:      &F, G: &g, Steps: 10, Seconds: 1.5,
			Files: map[string]string{"model": filepath.Join(j.ID, ModelFile), "log": filepath.Join(j.ID, LogFile)}}
		if err := writeJSON(filepath.Join(dir, j.ID, ResultFile), res); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(dir, "jobs.yaml", jobs); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCollectMarksNonDominated(t *testing.T) {
	col, err := Collect(fakeBatch(t, 6))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(col.VaryingKeys, ",") != "seed" || strings.Join(col.Tasks, ",") != "a,b,c" {
		t.Errorf("varying keys %v, tasks %v; want [seed], [a b c]", col.VaryingKeys, col.Tasks)
	}
	for k, r := range col.Rows {
		want := k < 6 && k != 3 // job 3 is dominated; job 6 failed
		if r.NonDominated != want {
			t.Errorf("row %d (%s): non-dominated %v, want %v", k, r.Status, r.NonDominated, want)
		}
	}
	if col.Rows[6].Status != StateFailed || !strings.Contains(col.Rows[6].Error, "NaN") {
		t.Errorf("failed row: %+v", col.Rows[6])
	}
}

func TestDominates(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 1}, []float64{2, 2}, true},
		{[]float64{1, 2}, []float64{1, 2}, false},
		{[]float64{1, 2}, []float64{1, 3}, true},
		{[]float64{1, 3}, []float64{2, 2}, false},
	} {
		if got := dominates(tc.a, tc.b); got != tc.want {
			t.Errorf("dominates(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// chromium returns Debian's chromium, skipping the test when it is
// missing except under CI=true (CI installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true: chromium not installed (apt-get install chromium)")
	}
	t.Skip("chromium not installed")
	return ""
}

// headless runs chromium headless on url with extra arguments and
// returns its standard output.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=2000"}, extra...)
	cmd := exec.Command(bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.Bytes()
}

// TestReportInBrowser renders report.html in headless chromium: the page
// draws (a screenshot that is not blank), and clicking a column's header
// (through the page's #sort= link, which clicks it) sorts the table.
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := fakeBatch(t, 6)
	col, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := filepath.Abs(col.Files["html"])
	url := "file://" + page

	rowRE := regexp.MustCompile(`<tr data-id="([^"]+)"`)
	order := func(dom []byte) []string {
		var ids []string
		for _, m := range rowRE.FindAllSubmatch(dom, -1) {
			ids = append(ids, string(m[1]))
		}
		return ids
	}
	lossC := map[string]float64{}
	for _, r := range col.Rows {
		if v, ok := r.Losses["c"]; ok {
			lossC[r.ID] = float64(v)
		}
	}
	unsorted := order(headless(t, bin, url, "--dump-dom"))
	if len(unsorted) != 7 {
		t.Fatalf("%d table rows in the rendered page, want 7", len(unsorted))
	}
	for _, tc := range []struct {
		hash string
		desc bool
	}{{"#sort=loss_c", false}, {"#sort=-loss_c", true}} {
		dom := headless(t, bin, url+tc.hash, "--dump-dom")
		got := order(dom)
		if len(got) != 7 {
			t.Fatalf("%s: %d rows", tc.hash, len(got))
		}
		// The failed job has no loss: it goes last either way.
		if got[6] != col.Rows[6].ID {
			t.Errorf("%s: last row %s, want the failed job %s", tc.hash, got[6], col.Rows[6].ID)
		}
		vals := make([]float64, 6)
		for i, id := range got[:6] {
			vals[i] = lossC[id]
		}
		sorted := slices.IsSorted(vals)
		if tc.desc {
			slices.Reverse(vals)
			sorted = slices.IsSorted(vals)
		}
		if !sorted || slices.Equal(got, unsorted) {
			t.Errorf("%s: rows %v (loss_c %v) not sorted (unsorted order %v)", tc.hash, got, vals, unsorted)
		}
		cls := "asc"
		if tc.desc {
			cls = "desc"
		}
		if !regexp.MustCompile(`<th data-col="loss_c"[^>]*class="` + cls + `"`).Match(dom) {
			t.Errorf("%s: header loss_c not marked %s", tc.hash, cls)
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	headless(t, bin, url, "--screenshot="+shot, "--window-size=1200,900", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	colors := map[string]bool{}
	red := 0
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[fmt.Sprint(r>>12, g>>12, bl>>12)] = true
			if r>>8 > 0xc0 && g>>8 < 0x60 && bl>>8 < 0x60 {
				red++
			}
		}
	}
	if b.Dx() != 1200 || len(colors) < 8 || red == 0 {
		t.Errorf("screenshot %v: %d colours, %d red samples; want a drawn page with the non-dominated jobs in red", b, len(colors), red)
	}
	if keep := os.Getenv("PARETONAV_KEEP_SCREENSHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(keep, data, 0o644)
	}
}
