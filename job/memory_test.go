package job

import (
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend"
)

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		err  bool
	}{
		{"12GB", 12e9, false},
		{"12g", 12e9, false},
		{"1.5 GiB", 3 << 29, false},
		{"800MB", 800e6, false},
		{"64MiB", 64 << 20, false},
		{"1000000", 1e6, false},
		{"2T", 2e12, false},
		{"", 0, true},
		{"-1GB", 0, true},
		{"0", 0, true},
		{"lots", 0, true},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("ParseBytes(%q): error %q does not name the flag", c.in, err)
		}
	}
}

// TestMemoryFitting checks the batch size suggested when a step does not
// fit: activations proportional to the batch, the rest fixed.
func TestMemoryFitting(t *testing.T) {
	step := backend.MemoryEstimate{Values: 8e9, Weights: 1e9, Jacobian: 5e8, Scratch: 5e8} // batch 8: 1 GB per example
	cases := []struct {
		limit  int64
		models int
		want   string
	}{
		{6e9, 1, "--batch 4 should fit"}, // 2 GB fixed + 4 × 1 GB
		{2.5e9, 1, "even --batch 1 does not fit"},
		{1e9, 1, "the parameters alone need 2.0 GB"},
		{12e9, 2, "--batch 4 should fit"}, // two models: 4 GB fixed + 2·4 GB
	}
	for _, c := range cases {
		p := &MemoryPlan{Step: step, Models: c.models, Limit: c.limit}
		if got := p.fitting(8); !strings.Contains(got, c.want) {
			t.Errorf("limit %d, %d models: %q, expected %q", c.limit, c.models, got, c.want)
		}
	}
}

// TestAvailableMemory checks that the limit read from the machine is
// positive and says where it comes from.
func TestAvailableMemory(t *testing.T) {
	b, from, err := AvailableMemory()
	if err != nil {
		t.Fatal(err)
	}
	if b <= 0 || from == "" {
		t.Errorf("AvailableMemory() = %d bytes from %q", b, from)
	}
}

// TestGCLimit checks the Go runtime's soft memory limit derived from the
// plans: the expected peaks of the process's jobs (this one alone, or with
// others planned before it) plus 15%, at least 256 MiB more, never above
// the job's limit.
func TestGCLimit(t *testing.T) {
	step := backend.MemoryEstimate{Values: 4e9, Weights: 5e8, Jacobian: 4e8, Scratch: 1e8}
	cases := []struct {
		name   string
		step   backend.MemoryEstimate
		models int
		extra  int64
		before int64 // planned by earlier jobs of the process
		limit  int64
		want   int64
	}{
		{"15% above", step, 1, 0, 0, 20e9, 5.75e9},
		{"loop and models counted", step, 2, 1e9, 0, 20e9, 13.8e9},
		{"jobs planned before counted", step, 1, 0, 3e9, 20e9, 9.2e9},
		{"at least 256 MiB above", backend.MemoryEstimate{Values: 1e8}, 1, 0, 0, 20e9, 1e8 + 256<<20},
		{"capped by the limit", step, 1, 0, 0, 5.2e9, 5.2e9},
	}
	for _, c := range cases {
		p := &MemoryPlan{Step: c.step, Models: c.models, Extra: c.extra, Limit: c.limit}
		if got := p.gcLimit(c.before + p.Total()); got != c.want {
			t.Errorf("%s: gcLimit = %d, expected %d", c.name, got, c.want)
		}
	}
}
