package finetune

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/paretonav/paretonav/png"
)

// bowl is a two-task problem without data, ℓ_i = ½ Σ_j w_ij (θ_j − c_ij)²,
// that shares its parameter vector with the loop (SharedParams) when
// shared is set and lends it buffers (ScratchLender) when lends is set,
// counting those out (lent, at most maxLent) and those still out when an
// evaluation starts (lateReturns).
type bowl struct {
	theta                 []float32
	shared, lends         bool
	lent, maxLent, lateRe int
	calls, nanAt          int // evaluation nanAt (1-based; 0: none) gives NaN losses
}

func (b *bowl) Lends() bool { return b.lends }
func (b *bowl) Lend(n int) []float32 {
	b.lent++
	b.maxLent = max(b.maxLent, b.lent)
	return make([]float32, n)
}
func (b *bowl) TakeBack([]float32) { b.lent-- }

func newBowl(n int, shared, lends bool) *bowl {
	b := &bowl{theta: make([]float32, n), shared: shared, lends: lends}
	for j := range b.theta {
		b.theta[j] = float32(j%7) * 0.01
	}
	return b
}

func (b *bowl) Tasks() []string      { return []string{"a", "b"} }
func (b *bowl) NumParams() int       { return len(b.theta) }
func (b *bowl) Params(dst []float32) { copy(dst, b.theta) }
func (b *bowl) SetParams(src []float32) error {
	copy(b.theta, src)
	return nil
}

func (b *bowl) Theta() []float32 {
	if b.shared {
		return b.theta
	}
	return nil
}

// Evaluate: on the first half of the coordinates the tasks pull apart
// (centers +1 and −1, weights 1 and 3), on the second only task a pulls,
// weakly (weight 0.01). Adam moves every coordinate by about the rate
// whatever the size of its gradient, so its step along any direction that
// moves the first half raises one of the losses: PNG's constrained update
// is made.
func (b *bowl) Evaluate(_ Batch, losses []float64, jac *png.Jacobian) error {
	if b.lent != 0 {
		b.lateRe++
	}
	b.calls++
	if b.calls == b.nanAt {
		losses[0], losses[1] = math.NaN(), math.NaN()
		return nil
	}
	n := len(b.theta)
	w := [2][2]float64{{1, 0.01}, {3, 0}}
	c := [2]float64{1, -1}
	for i := range losses {
		var s float64
		for j, t := range b.theta {
			wi := w[i][0]
			if j >= n/2 {
				wi = w[i][1]
			}
			d := float64(t) - c[i]
			s += wi * d * d
			if jac != nil {
				jac.Row(i)[j] = float32(wi * d)
			}
		}
		losses[i] = s / 2
	}
	return nil
}

// loopVectorsOf counts the distinct n-long float32 buffers a point holds,
// J and the problem's own vector aside: every []float32 field of the
// point and of its optimizer state.
func loopVectorsOf(pt *point, n int, own []float32) int {
	seen := map[uintptr]bool{}
	add := func(v []float32) {
		if len(v) == n && &v[0] != &own[0] {
			seen[uintptr(unsafe.Pointer(&v[0]))] = true
		}
	}
	f32 := reflect.TypeOf([]float32(nil))
	for _, s := range []reflect.Value{reflect.ValueOf(pt).Elem(), reflect.ValueOf(&pt.opt).Elem()} {
		for i := 0; i < s.NumField(); i++ {
			if f := s.Field(i); f.Type() == f32 {
				add(unsafe.Slice((*float32)(f.UnsafePointer()), f.Len()))
			}
		}
	}
	return len(seen)
}

// heapRecorder reads the live heap (after a collection) at every step.
type heapRecorder struct{ max uint64 }

func (h *heapRecorder) Init(*Config) error { return nil }
func (h *heapRecorder) Record(*Step) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.max = max(h.max, ms.HeapAlloc)
	return nil
}
func (h *heapRecorder) Done(*Result) error { return nil }

// TestLoopVectorsCounted checks LoopVectors and LentVectors, which tune's
// and front's memory plans count (job.TuneLoopBytes), against the loop
// itself, with Adam and PNG's constrained update (the most the loop
// holds): the distinct n-long buffers of the point after the run, and the
// live heap the run adds beside the problem, measured after a collection
// at every step (n = 2²⁰: 4 MiB a vector, far above everything else the
// loop allocates). A problem that shares its vector (the ONNX backend)
// costs no copy of θ; one that does not, one. A problem that lends
// buffers (the ONNX backend) has them all back before every evaluation
// and never more than LentVectors out.
func TestLoopVectorsCounted(t *testing.T) {
	const n = 1 << 20
	for _, c := range []struct{ shared, lends bool }{{true, false}, {false, false}, {true, true}} {
		want := LoopVectors
		if !c.shared {
			want++
		}
		if c.lends {
			want -= LentVectors
		}
		p := newBowl(n, c.shared, c.lends)
		// γ tiny: the control stays on, and the constraint binds
		s := &Settings{Optimizer: "adam", LR: 1e-3, Steps: 4, Method: png.PNG{Settings: png.Settings{Gamma: 1e-9}}}
		rec := &heapRecorder{}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		l, err := newLoop([]Problem{p}, nil, nil, s, rec, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.loop(context.Background()); err != nil {
			t.Fatal(err)
		}
		pt := l.pts[0]
		if !pt.pending || l.step != 4 || (!c.lends && (pt.pendUpd == nil || pt.bound == nil)) {
			t.Fatalf("%+v: the constrained update was not made: the test does not reach the loop's largest state", c)
		}
		if got := loopVectorsOf(pt, n, p.theta); got != want {
			t.Errorf("%+v: the point holds %d n-vectors beside J after the run, the plan counts %d", c, got, want)
		}
		if c.lends && (p.lateRe != 0 || p.maxLent != LentVectors || p.lent != 0) {
			t.Errorf("%+v: %d evaluations started with lent buffers out; at most %d out (LentVectors %d), %d out at the end",
				c, p.lateRe, p.maxLent, LentVectors, p.lent)
		}
		if c.lends {
			continue // the lent buffers are the bowl's allocations: the heap does not tell them apart
		}
		// The loop's vectors and J (2 rows), within 1 MiB of
		// everything else (slices of m values, the loop's records).
		planned := uint64((want + 2) * 4 * n)
		if grew := rec.max - before; grew > planned+1<<20 || grew+4*n < planned {
			t.Errorf("%+v: the live heap grew by %d bytes during the run; the plan counts %d", c, grew, planned)
		}
		runtime.KeepAlive(l)
	}
}

// cancelAfter cancels the run's context once step k is recorded.
type cancelAfter struct {
	k      int
	cancel context.CancelFunc
}

func (c cancelAfter) Init(*Config) error { return nil }
func (c cancelAfter) Record(st *Step) error {
	if st.Step == c.k {
		c.cancel()
	}
	return nil
}
func (c cancelAfter) Done(*Result) error { return nil }

// TestSharedLentResumeBitExact checks the loop's pending update through a
// checkpoint with Adam and PNG's constrained update: a run interrupted
// after step 3 and resumed from its checkpoint ends, bit for bit, where an
// uninterrupted run does, and so do runs on a problem that neither shares
// its vector nor lends buffers (the loop's arithmetic does not depend on
// where its vectors live).
func TestSharedLentResumeBitExact(t *testing.T) {
	const n = 4096
	settings := func(ckpt string) *Settings {
		return &Settings{Optimizer: "adam", LR: 1e-3, Steps: 6, CheckpointPath: ckpt,
			Method: png.PNG{Settings: png.Settings{Gamma: 1e-9}}}
	}
	var want []float32
	for _, c := range []struct{ shared, lends bool }{{false, false}, {true, true}, {true, false}} {
		p := newBowl(n, c.shared, c.lends)
		if _, err := Run(context.Background(), p, nil, nil, settings(""), nil); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = slices.Clone(p.theta)
		} else if !slices.Equal(p.theta, want) {
			t.Errorf("%+v: uninterrupted run ends elsewhere than the one that neither shares nor lends", c)
		}
		ckpt := filepath.Join(t.TempDir(), "run.ckpt")
		ctx, cancel := context.WithCancel(context.Background())
		q := newBowl(n, c.shared, c.lends)
		if _, err := Run(ctx, q, nil, nil, settings(ckpt), cancelAfter{3, cancel}); err == nil {
			t.Fatalf("%+v: the run was not interrupted", c)
		}
		cancel()
		fresh := newBowl(n, c.shared, c.lends)
		clear(fresh.theta) // the parameters come from the checkpoint
		if _, err := Resume(context.Background(), ckpt, fresh, nil, nil, settings(ckpt), nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fresh.theta, want) {
			t.Errorf("%+v: the resumed run ends elsewhere than the uninterrupted one", c)
		}
	}
}

// retries counts the steps recorded after a rollback.
type retries struct{ n *int }

func (r retries) Init(*Config) error { return nil }
func (r retries) Record(st *Step) error {
	if st.Retries > 0 {
		*r.n++
	}
	return nil
}
func (r retries) Done(*Result) error { return nil }

// TestSharedLentRollbackBitExact checks the rollback from the pending
// update: a step whose losses are NaN (the 4th evaluation) returns to θ
// before the last update and redoes it at half the rate, bit for bit
// alike whether the problem shares its vector and lends buffers or not.
func TestSharedLentRollbackBitExact(t *testing.T) {
	const n = 4096
	var want []float32
	for _, c := range []struct{ shared, lends bool }{{false, false}, {true, true}} {
		p := newBowl(n, c.shared, c.lends)
		p.nanAt = 4
		var k int
		s := &Settings{Optimizer: "adam", LR: 1e-3, Steps: 6, Method: png.PNG{Settings: png.Settings{Gamma: 1e-9}}}
		if _, err := Run(context.Background(), p, nil, nil, s, retries{&k}); err != nil {
			t.Fatal(err)
		}
		if k != 1 {
			t.Fatalf("%+v: %d steps recorded after a rollback, want 1", c, k)
		}
		if want == nil {
			want = slices.Clone(p.theta)
		} else if !slices.Equal(p.theta, want) {
			t.Errorf("%+v: the run ends elsewhere than the one that neither shares nor lends", c)
		}
	}
}
