package job

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/finetune/metrics"
)

// ModelMeter returns a finetune.Meter of md's task metrics (front.Meter
// over md's outputs): the validation records of tune carry them.
func ModelMeter(md *backend.Model, tasks []backend.Task) finetune.Meter {
	return modelMeter{front.NewMeter(tasks), md}
}

type modelMeter struct {
	m  *front.Meter
	md *backend.Model
}

func (m modelMeter) Add(b finetune.Batch) error { return m.m.Add(m.md, b) }

func (m modelMeter) Result() map[string]map[string]float64 {
	if m.m.Empty() {
		return nil
	}
	return m.m.Result()
}

// NumMetrics converts task metrics to Nums (NaN → null in JSON); nil
// stays nil.
func NumMetrics(m map[string]map[string]float64) map[string]map[string]Num {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]Num, len(m))
	for task, ms := range m {
		out[task] = make(map[string]Num, len(ms))
		for k, v := range ms {
			out[task][k] = Num(v)
		}
	}
	return out
}

// metricColumns are the metrics in the order and style of the NYUv2
// table (MTAN; the PNG paper's Table 3): label, key, and whether the
// value is a fraction shown in percent.
var metricColumns = []struct {
	label, key string
	percent    bool
}{
	{"mIoU", metrics.MIoU, true}, {"Pix Acc", metrics.PixelAcc, true}, {"Accuracy", metrics.Accuracy, true},
	{"Abs Err", metrics.AbsErr, false}, {"Rel Err", metrics.RelErr, false},
	{"Mean", metrics.AngleMean, false}, {"Median", metrics.AngleMedian, false},
	{"<11.25°", metrics.Within11, true}, {"<22.5°", metrics.Within22, true}, {"<30°", metrics.Within30, true},
}

// WriteMetrics prints the task metrics as the NYUv2 table does, one line
// per task in the order of names (tasks without metrics are skipped):
// mIoU, pixel accuracy, accuracy and the within-t° fractions in percent,
// depth errors as they are, angles in degrees. The header speaks of pixels
// only when some task has a per-pixel metric (classification tasks have
// only Accuracy, over examples). Nothing is printed without metrics.
func WriteMetrics(w io.Writer, indent string, names []string, m map[string]map[string]Num) {
	if len(m) == 0 {
		return
	}
	dense := false
	for _, ms := range m {
		for k := range ms {
			dense = dense || k != metrics.Accuracy
		}
	}
	if dense {
		fmt.Fprintf(w, "%smetrics, pooled over all evaluated pixels (%% as in the NYUv2 table; angles in degrees; <t°: share of pixels within t°):\n", indent)
	} else {
		fmt.Fprintf(w, "%smetrics over all evaluated examples (%%):\n", indent)
	}
	order := append([]string(nil), names...)
	var extra []string
	for t := range m {
		if indexOf(names, t) == len(names) {
			extra = append(extra, t)
		}
	}
	sort.Strings(extra)
	order = append(order, extra...)
	for _, t := range order {
		ms, ok := m[t]
		if !ok {
			continue
		}
		var parts []string
		for _, c := range metricColumns {
			v, ok := ms[c.key]
			if !ok {
				continue
			}
			x := float64(v)
			switch {
			case math.IsNaN(x):
				parts = append(parts, c.label+" —")
			case c.percent:
				parts = append(parts, fmt.Sprintf("%s %.2f", c.label, 100*x))
			case c.key == metrics.AbsErr || c.key == metrics.RelErr:
				parts = append(parts, fmt.Sprintf("%s %.4f", c.label, x))
			default:
				parts = append(parts, fmt.Sprintf("%s %.2f", c.label, x))
			}
		}
		fmt.Fprintf(w, "%s  %-10s %s\n", indent, t, strings.Join(parts, "  "))
	}
}

// indexOf returns the index of v in s, len(s) when absent.
func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return len(s)
}

// BeyondAccuracy reports whether m holds a metric other than a per-example
// accuracy (those summaries already show beside the losses).
func BeyondAccuracy(m map[string]map[string]Num) bool {
	for _, ms := range m {
		for k := range ms {
			if k != metrics.Accuracy {
				return true
			}
		}
	}
	return false
}
