package front

import (
	"fmt"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune/metrics"
	"github.com/paretonav/paretonav/importer"
)

// Outputer is a model that computes the values of named outputs on a
// batch (backend.Model.Outputs).
type Outputer interface {
	Outputs(b map[string]*importer.Tensor, names ...string) (map[string]*importer.Tensor, error)
}

// Meter accumulates the task metrics of package metrics over the batches
// of one evaluation, pooled over every pixel, by the metric family of each
// task's loss kind (backend.LossKind.Metrics): for classes (nll, ce) with
// per-pixel targets ([N, C, d...] outputs) "miou" and "pixel_acc", with
// per-example targets ([N, C]) "accuracy"; for depth (depth_l1) "abs_err"
// and "rel_err"; for normals (normal_cos) the angle metrics. Tasks of
// kinds without a family have none. The zero Meter is not usable: use
// NewMeter.
type Meter struct {
	tasks []backend.Task
	conf  []*metrics.Confusion // per task, created at the first batch
	pixel []bool
	depth []*metrics.Depth
	norm  []*metrics.Normals
	outs  []string
}

// HasMetrics reports whether task t has metrics (its loss kind has a
// metric family: nll, ce, depth_l1, normal_cos).
func HasMetrics(t backend.Task) bool { return metricsOf(t) != "" }

// MetricsDoc says which metrics a Meter reports for a task whose loss
// kind has metric family family (backend.LossKind.Metrics), as the
// command-line reference lists them; "" for a family it does not know.
func MetricsDoc(family string) string {
	switch family {
	case backend.MetricsClasses:
		return metrics.MIoU + " and " + metrics.PixelAcc + ", or " + metrics.Accuracy + " per example"
	case backend.MetricsDepth:
		return metrics.AbsErr + ", " + metrics.RelErr
	case backend.MetricsNormals:
		return strings.Join([]string{metrics.AngleMean, metrics.AngleMedian, metrics.Within11, metrics.Within22, metrics.Within30}, ", ")
	}
	return ""
}

// metricsOf is the metric family of t's loss kind.
func metricsOf(t backend.Task) string {
	k, _ := backend.Loss(t.Loss)
	return k.Metrics
}

// NewMeter returns a Meter for tasks.
func NewMeter(tasks []backend.Task) *Meter {
	m := &Meter{tasks: tasks, conf: make([]*metrics.Confusion, len(tasks)), pixel: make([]bool, len(tasks)),
		depth: make([]*metrics.Depth, len(tasks)), norm: make([]*metrics.Normals, len(tasks))}
	seen := map[string]bool{}
	for k, t := range tasks {
		switch metricsOf(t) {
		case backend.MetricsDepth:
			m.depth[k] = &metrics.Depth{}
		case backend.MetricsNormals:
			m.norm[k] = &metrics.Normals{}
		}
		if HasMetrics(t) && !seen[t.Output] {
			seen[t.Output] = true
			m.outs = append(m.outs, t.Output)
		}
	}
	return m
}

// Empty reports whether no task has metrics (Add then does nothing).
func (m *Meter) Empty() bool { return len(m.outs) == 0 }

// Add computes md's outputs on batch b and accumulates every task's
// metrics. Errors name the task.
func (m *Meter) Add(md Outputer, b map[string]*importer.Tensor) error {
	if m.Empty() {
		return nil
	}
	vals, err := md.Outputs(b, m.outs...)
	if err != nil {
		return err
	}
	return m.AddOutputs(vals, b)
}

// Outputs returns the names of the outputs Add reads.
func (m *Meter) Outputs() []string { return m.outs }

// AddOutputs accumulates every task's metrics from outputs already
// computed on batch b (vals holds at least Outputs()).
func (m *Meter) AddOutputs(vals, b map[string]*importer.Tensor) error {
	for k, t := range m.tasks {
		if !HasMetrics(t) {
			continue
		}
		if err := m.add(k, t, vals[t.Output], b[t.Target]); err != nil {
			return fmt.Errorf("task %q: %w", t.Name, err)
		}
	}
	return nil
}

func (m *Meter) add(k int, t backend.Task, out, target *importer.Tensor) error {
	if out == nil || target == nil {
		return fmt.Errorf("output %q or target array %q missing", t.Output, t.Target)
	}
	s := out.Shape
	if len(s) < 2 {
		return fmt.Errorf("output %q has shape %v; metrics need [N, C, ...]", t.Output, s)
	}
	N, C, inner := s[0], s[1], 1
	for _, d := range s[2:] {
		inner *= d
	}
	switch {
	case IsClassification(t):
		if m.conf[k] == nil {
			m.conf[k], m.pixel[k] = metrics.NewConfusion(C), len(s) > 2
		}
		if m.conf[k].C != C {
			return fmt.Errorf("output %q has %d classes, earlier batches %d", t.Output, C, m.conf[k].C)
		}
		return m.conf[k].AddScores(out.Float64s(), target.Float64s(), N, inner, t.IgnoreIndex)
	case metricsOf(t) == backend.MetricsDepth:
		return m.depth[k].Add(out.Float64s(), target.Float64s())
	default:
		return m.norm[k].Add(out.Float64s(), target.Float64s(), N, C, inner)
	}
}

// Result returns each task's metrics by name (tasks without metrics are
// absent). A metric with nothing counted (every target ignored or zero)
// is NaN.
func (m *Meter) Result() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for k, t := range m.tasks {
		switch {
		case m.conf[k] != nil && m.pixel[k]:
			out[t.Name] = map[string]float64{metrics.MIoU: m.conf[k].MIoU(), metrics.PixelAcc: m.conf[k].Accuracy()}
		case m.conf[k] != nil:
			out[t.Name] = map[string]float64{metrics.Accuracy: m.conf[k].Accuracy()}
		case m.depth[k] != nil:
			out[t.Name] = map[string]float64{metrics.AbsErr: m.depth[k].AbsErr(), metrics.RelErr: m.depth[k].RelErr()}
		case m.norm[k] != nil:
			a := m.norm[k]
			out[t.Name] = map[string]float64{metrics.AngleMean: a.Mean(), metrics.AngleMedian: a.Median(),
				metrics.Within11: a.Within(11.25), metrics.Within22: a.Within(22.5), metrics.Within30: a.Within(30)}
		}
	}
	return out
}
