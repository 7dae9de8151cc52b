package metrics

import (
	"fmt"
	"math"
	"slices"
)

// Metric names, the keys of a task's metrics in JSON output.
const (
	MIoU        = "miou"
	PixelAcc    = "pixel_acc"
	Accuracy    = "accuracy"
	AbsErr      = "abs_err"
	RelErr      = "rel_err"
	AngleMean   = "angle_mean"
	AngleMedian = "angle_median"
	Within11    = "within_11.25"
	Within22    = "within_22.5"
	Within30    = "within_30"
)

// Confusion is a C×C confusion matrix accumulated over an evaluation:
// Counts[t*C+p] counts the targets of class t predicted as class p.
type Confusion struct {
	C      int
	Counts []int64
}

// NewConfusion returns an empty confusion matrix for classes 0..C−1.
func NewConfusion(C int) *Confusion {
	if C < 1 {
		panic(fmt.Sprintf("metrics: NewConfusion(%d): want at least 1 class", C))
	}
	return &Confusion{C: C, Counts: make([]int64, C*C)}
}

// AddScores adds N examples whose scores (log-probabilities, logits or any
// monotone transform) are laid out [N, C, inner] row-major, with class
// labels [N, inner] (inner = 1 for per-example targets, H·W for per-pixel
// ones). Each counted target is predicted as the class with the largest
// score, the first on ties; labels equal to ignore are skipped. A label
// that is not an integer in [0, C) is an error, and so are mismatched
// lengths.
func (c *Confusion) AddScores(scores, labels []float64, N, inner int, ignore int64) error {
	C := c.C
	if len(scores) != N*C*inner || len(labels) != N*inner {
		return fmt.Errorf("metrics: %d scores and %d labels for N = %d, C = %d, inner = %d; want N·C·inner and N·inner",
			len(scores), len(labels), N, C, inner)
	}
	for n := 0; n < N; n++ {
		for j := 0; j < inner; j++ {
			y := labels[n*inner+j]
			if y == float64(ignore) {
				continue
			}
			t := int(y)
			if float64(t) != y || t < 0 || t >= C {
				return fmt.Errorf("metrics: label %v at example %d, position %d: want an integer class in [0, %d) or the ignore index %d", y, n, j, C, ignore)
			}
			base := n*C*inner + j
			best, bv := 0, scores[base]
			for k := 1; k < C; k++ {
				if v := scores[base+k*inner]; v > bv {
					best, bv = k, v
				}
			}
			c.Counts[t*C+best]++
		}
	}
	return nil
}

// Total returns the number of counted targets.
func (c *Confusion) Total() int64 {
	var s int64
	for _, v := range c.Counts {
		s += v
	}
	return s
}

// Accuracy returns the fraction of counted targets predicted right (NaN
// when none was counted): the pixel accuracy of segmentation, the
// accuracy of per-example classification.
func (c *Confusion) Accuracy() float64 {
	tot := c.Total()
	if tot == 0 {
		return math.NaN()
	}
	var hit int64
	for k := 0; k < c.C; k++ {
		hit += c.Counts[k*c.C+k]
	}
	return float64(hit) / float64(tot)
}

// MIoU returns the mean over classes of TP / (TP + FP + FN), leaving out
// the classes absent from both targets and predictions; NaN when no
// target was counted.
func (c *Confusion) MIoU() float64 {
	C := c.C
	var sum float64
	var classes int
	for k := 0; k < C; k++ {
		tp := c.Counts[k*C+k]
		var row, col int64
		for j := 0; j < C; j++ {
			row += c.Counts[k*C+j]
			col += c.Counts[j*C+k]
		}
		union := row + col - tp
		if union == 0 {
			continue
		}
		sum += float64(tp) / float64(union)
		classes++
	}
	if classes == 0 {
		return math.NaN()
	}
	return sum / float64(classes)
}

// Depth accumulates depth errors over the elements with a non-zero target.
type Depth struct {
	absSum, relSum float64
	n              int64
}

// Add accumulates the elements of pred and target (equal lengths, any
// layout) whose target is non-zero.
func (d *Depth) Add(pred, target []float64) error {
	if len(pred) != len(target) {
		return fmt.Errorf("metrics: depth: %d predictions for %d targets", len(pred), len(target))
	}
	for i, t := range target {
		if t == 0 {
			continue
		}
		e := math.Abs(pred[i] - t)
		d.absSum += e
		d.relSum += e / math.Abs(t)
		d.n++
	}
	return nil
}

// Count returns the number of elements accumulated.
func (d *Depth) Count() int64 { return d.n }

// AbsErr returns mean |pred − target| (NaN when nothing was counted).
func (d *Depth) AbsErr() float64 { return ratio(d.absSum, d.n) }

// RelErr returns mean |pred − target| / |target| (NaN when nothing was
// counted).
func (d *Depth) RelErr() float64 { return ratio(d.relSum, d.n) }

func ratio(s float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// Normals accumulates the angles between predicted and target normals.
type Normals struct {
	angles []float32
	sum    float64
	sorted bool
	below  [len(thresholds)]int64 // exact counts below each threshold
}

// thresholds are the angles (degrees) of the within_* metrics.
var thresholds = [...]float64{11.25, 22.5, 30}

// Add accumulates N examples of normals laid out [N, C, inner] (C vector
// components on axis 1, inner pixels), pred and target alike, over the
// pixels whose target vector is non-zero.
func (a *Normals) Add(pred, target []float64, N, C, inner int) error {
	if len(pred) != N*C*inner || len(target) != N*C*inner {
		return fmt.Errorf("metrics: normals: %d predictions and %d targets for N = %d, C = %d, inner = %d; want N·C·inner each",
			len(pred), len(target), N, C, inner)
	}
	for n := 0; n < N; n++ {
		for j := 0; j < inner; j++ {
			var dot, pp, tt float64
			for k := 0; k < C; k++ {
				i := (n*C+k)*inner + j
				dot += pred[i] * target[i]
				pp += pred[i] * pred[i]
				tt += target[i] * target[i]
			}
			if tt == 0 {
				continue
			}
			cos := 0.0
			if pp > 0 {
				cos = dot / (math.Sqrt(pp) * math.Sqrt(tt))
			}
			deg := math.Acos(math.Max(-1, math.Min(1, cos))) * 180 / math.Pi
			a.angles = append(a.angles, float32(deg))
			a.sum += deg
			for k, t := range thresholds {
				if deg < t {
					a.below[k]++
				}
			}
		}
	}
	a.sorted = false
	return nil
}

// Count returns the number of pixels accumulated.
func (a *Normals) Count() int { return len(a.angles) }

// Mean returns the mean angle in degrees (NaN when nothing was counted).
func (a *Normals) Mean() float64 { return ratio(a.sum, int64(len(a.angles))) }

// Median returns the median angle in degrees (NaN when nothing was
// counted).
func (a *Normals) Median() float64 {
	n := len(a.angles)
	if n == 0 {
		return math.NaN()
	}
	if !a.sorted {
		slices.Sort(a.angles)
		a.sorted = true
	}
	if n%2 == 1 {
		return float64(a.angles[n/2])
	}
	return (float64(a.angles[n/2-1]) + float64(a.angles[n/2])) / 2
}

// Within returns the fraction of pixels whose angle is below deg degrees
// (NaN when nothing was counted). For 11.25, 22.5 and 30 it is counted
// exactly from the float64 angles; other thresholds compare the stored
// float32 angles.
func (a *Normals) Within(deg float64) float64 {
	if len(a.angles) == 0 {
		return math.NaN()
	}
	for k, t := range thresholds {
		if deg == t {
			return float64(a.below[k]) / float64(len(a.angles))
		}
	}
	var k int
	for _, v := range a.angles {
		if float64(v) < deg {
			k++
		}
	}
	return float64(k) / float64(len(a.angles))
}
