package front

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/png/pareto"
)

// DefaultLossRef is the hypervolume reference point's value in every loss
// coordinate (the PNG paper's 0.6 for MultiMNIST-style losses).
const DefaultLossRef = 0.6

// Perturb adds independent Gaussian noise of standard deviation spread to
// every parameter of every problem, from a generator seeded with seed (so
// that the same seed gives the same models). Model k's noise does not
// depend on how many models follow it.
func Perturb(ps []finetune.Problem, spread float64, seed int64) error {
	if spread < 0 || math.IsNaN(spread) || math.IsInf(spread, 0) {
		return fmt.Errorf("front: spread %v: want a finite value ≥ 0", spread)
	}
	for k, p := range ps {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(k)+0x7e57))
		theta := make([]float32, p.NumParams())
		p.Params(theta)
		for i := range theta {
			theta[i] += float32(spread * rng.NormFloat64())
		}
		if err := p.SetParams(theta); err != nil {
			return fmt.Errorf("front: model %d: %w", k, err)
		}
	}
	return nil
}

// Member is one model's measured outcome.
type Member struct {
	Losses []float64 // task losses
	Acc    []float64 // task accuracies in [0, 1], NaN where a task has none
	// Metrics are the task metrics (Meter) by task and name, nil when
	// none was measured.
	Metrics map[string]map[string]float64
}

// Quality measures a set of points in objective space (minimised).
type Quality struct {
	// HV is the hypervolume dominated by the points below Ref.
	HV  float64
	Ref []float64
	// IGDPlus is the IGD+ of the points against Reference.
	IGDPlus   float64
	Reference [][]float64
	// NonDominated counts the points no other point dominates.
	NonDominated int
}

// Measure returns the quality of points with hypervolume reference ref and
// IGD+ reference set reference; a nil reference means the non-dominated
// points themselves (then IGD+ is 0 by construction unless a point is
// NaN: it measures the set against a larger reference, as in Compare).
func Measure(points [][]float64, ref []float64, reference [][]float64) Quality {
	nd := pareto.NonDominated(points)
	if reference == nil {
		for _, i := range nd {
			reference = append(reference, points[i])
		}
	}
	q := Quality{HV: pareto.Hypervolume(points, ref), Ref: ref, Reference: reference, NonDominated: len(nd)}
	q.IGDPlus = math.NaN()
	if len(reference) > 0 {
		q.IGDPlus = pareto.IGDPlus(points, reference)
	}
	return q
}

// LossPoints returns the members' loss vectors.
func LossPoints(ms []Member) [][]float64 {
	out := make([][]float64, len(ms))
	for i, m := range ms {
		out[i] = m.Losses
	}
	return out
}

// AccPoints returns the members' accuracy vectors negated (so that
// smaller is better, pareto.ForAccuracies), or nil when some task has no
// accuracy.
func AccPoints(ms []Member) [][]float64 {
	out := make([][]float64, len(ms))
	for i, m := range ms {
		for _, a := range m.Acc {
			if math.IsNaN(a) {
				return nil
			}
		}
		out[i] = m.Acc
	}
	return pareto.ForAccuracies(out)
}

// Uniform returns a loss-space reference point with every coordinate v.
func Uniform(m int, v float64) []float64 {
	out := make([]float64, m)
	for i := range out {
		out[i] = v
	}
	return out
}

// Gaps returns the Euclidean distances between neighbours of 2-D points
// sorted by their first coordinate (the spacing of a front); nil for
// fewer than two points.
func Gaps(points [][]float64) []float64 {
	if len(points) < 2 {
		return nil
	}
	idx := make([]int, len(points))
	for i := range idx {
		idx[i] = i
	}
	sortBy(idx, func(i, j int) bool { return points[i][0] < points[j][0] })
	out := make([]float64, len(idx)-1)
	for k := 1; k < len(idx); k++ {
		a, b := points[idx[k-1]], points[idx[k]]
		var d float64
		for i := range a {
			d += (a[i] - b[i]) * (a[i] - b[i])
		}
		out[k-1] = math.Sqrt(d)
	}
	return out
}

// Snapshots is a finetune.Recorder that copies every model's parameters
// after the steps listed in At (1-based step numbers), for checkpoint
// collections. The problems must be those the run trains.
type Snapshots struct {
	Problems []finetune.Problem
	At       map[int]bool
	// Params[i][k] is model k's parameters at the i-th recorded step,
	// Steps[i] that step.
	Params [][][]float32
	Steps  []int
}

// Init implements finetune.Recorder.
func (s *Snapshots) Init(*finetune.Config) error { return nil }

// Record implements finetune.Recorder: it copies the parameters when
// st.Step is listed in At.
func (s *Snapshots) Record(st *finetune.Step) error {
	if !s.At[st.Step] {
		return nil
	}
	snap := make([][]float32, len(s.Problems))
	for k, p := range s.Problems {
		snap[k] = make([]float32, p.NumParams())
		p.Params(snap[k])
	}
	s.Params = append(s.Params, snap)
	s.Steps = append(s.Steps, st.Step)
	return nil
}

// Done implements finetune.Recorder.
func (s *Snapshots) Done(*finetune.Result) error { return nil }

func sortBy(idx []int, less func(i, j int) bool) {
	sort.SliceStable(idx, func(a, b int) bool { return less(idx[a], idx[b]) })
}
