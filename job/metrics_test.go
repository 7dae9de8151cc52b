package job

import (
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune/metrics"
)

// TestWriteMetricsHeader: the header speaks of pixels and the NYUv2 table
// only when a task has a per-pixel metric; classification accuracy alone
// is over examples. Values print in the units the header names.
func TestWriteMetricsHeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m        map[string]map[string]Num
		want     []string
		dontWant []string
	}{
		{"classification", map[string]map[string]Num{"left": {metrics.Accuracy: 0.9277}, "right": {metrics.Accuracy: 0.8843}},
			[]string{"over all evaluated examples (%)", "left       Accuracy 92.77", "right      Accuracy 88.43"}, []string{"pixels", "NYUv2"}},
		{"segmentation", map[string]map[string]Num{"seg": {metrics.MIoU: 0.25, metrics.PixelAcc: 0.6}, "left": {metrics.Accuracy: 0.5}},
			[]string{"pooled over all evaluated pixels", "mIoU 25.00", "Pix Acc 60.00", "Accuracy 50.00"}, nil},
		{"none", nil, nil, []string{"metrics"}},
	} {
		var b strings.Builder
		WriteMetrics(&b, "  ", []string{"left", "right", "seg"}, tc.m)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: output %q lacks %q", tc.name, b.String(), w)
			}
		}
		for _, w := range tc.dontWant {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: output %q has %q", tc.name, b.String(), w)
			}
		}
	}
}
