package par

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
)

// TestForRunsEachChunkOnce checks that every chunk runs exactly once, for
// chunk counts below, at and above the number of workers, and that no two
// calls with the same index overlap.
func TestForRunsEachChunkOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
		counts := make([]atomic.Int32, max(n, 1))
		For(n, func(i int) {
			if counts[i].Add(1) != 1 {
				t.Errorf("n=%d: chunk %d ran twice", n, i)
			}
		})
		for i := 0; i < n; i++ {
			if c := counts[i].Load(); c != 1 {
				t.Errorf("n=%d: chunk %d ran %d times, want 1", n, i, c)
			}
		}
	}
}

// TestForWaitsForEveryChunk checks that For returns only after slow chunks
// run by workers have finished.
func TestForWaitsForEveryChunk(t *testing.T) {
	var done atomic.Int32
	For(4, func(i int) {
		time.Sleep(time.Duration(i+1) * 2 * Spin)
		done.Add(1)
	})
	if d := done.Load(); d != 4 {
		t.Fatalf("For returned with %d of 4 chunks finished", d)
	}
}

// TestForNested checks that loops inside chunks, and loops posted by many
// goroutines at once, all complete (no deadlock when every worker is busy)
// with every inner chunk run once.
func TestForNested(t *testing.T) {
	const outer, inner, callers = 8, 16, 6
	var total atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			For(outer, func(int) {
				For(inner, func(i int) { total.Add(int64(i + 1)) })
			})
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("nested loops did not finish in 30 s")
	}
	want := int64(callers * outer * inner * (inner + 1) / 2)
	if got := total.Load(); got != want {
		t.Fatalf("sum over inner chunks = %d, want %d", got, want)
	}
}

// TestForPanic checks that a panic in any chunk, the caller's or a
// worker's, reaches For's caller with its value, after the other chunks
// have finished.
func TestForPanic(t *testing.T) {
	boom := errors.New("boom")
	for _, bad := range []int{0, 1, 5} {
		var ran atomic.Int32
		got := func() (r any) {
			defer func() { r = recover() }()
			For(6, func(i int) {
				if i == bad {
					panic(boom)
				}
				time.Sleep(Spin)
				ran.Add(1)
			})
			return nil
		}()
		if got != boom {
			t.Errorf("chunk %d panicking: For raised %v, want %v", bad, got, boom)
		}
		if r := ran.Load(); r != 5 {
			t.Errorf("chunk %d panicking: %d other chunks finished before For raised, want 5", bad, r)
		}
	}
}

// TestForUsesWorkers checks that chunks run on more than one goroutine at
// once when the process has more than one P: two chunks that each wait for
// the other can only finish if they run concurrently.
func TestForUsesWorkers(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	var wg sync.WaitGroup
	wg.Add(2)
	ok := make(chan struct{})
	go func() {
		For(2, func(int) {
			wg.Done()
			wg.Wait()
		})
		close(ok)
	}()
	select {
	case <-ok:
	case <-time.After(30 * time.Second):
		t.Fatal("two chunks did not run at once")
	}
}

// BenchmarkForGaps times loops of two chunks of 5,000 dependent
// multiply-adds each, with 10,000 of serial work between loops, as in a
// step of small ops (about 24 against 41 µs a loop on the 2-core
// development machine):
// against starting a goroutine per chunk, as the kernels did before this
// package, whose second thread is asleep again when the next loop starts.
func BenchmarkForGaps(b *testing.B) {
	work := func(n int) float64 {
		s := 1.0
		for i := 0; i < n; i++ {
			s = s*1.0000001 + 1e-9
		}
		return s
	}
	const chunk, gap = 5000, 10000
	var sink atomic.Int64
	b.Run("par", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			For(2, func(int) { sink.Add(int64(work(chunk))) })
			sink.Add(int64(work(gap)))
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var wg sync.WaitGroup
			for c := 0; c < 2; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sink.Add(int64(work(chunk)))
				}()
			}
			wg.Wait()
			sink.Add(int64(work(gap)))
		}
	})
}

// TestHitShareSpin checks the idle worker's choice of spin: the full Spin
// while at least a quarter of its recent idle gaps were short enough for
// Spin to bridge, shortSpin once long gaps dominate, and back to Spin
// when short gaps return.
func TestHitShareSpin(t *testing.T) {
	short, long := int64(Spin/2), int64(4*Spin)
	repeat := func(gap int64, n int) []int64 {
		g := make([]int64, n)
		for i := range g {
			g[i] = gap
		}
		return g
	}
	for _, tc := range []struct {
		name string
		gaps []int64
		want time.Duration
	}{
		{"fresh worker", nil, Spin},
		{"short gaps", repeat(short, 50), Spin},
		{"gap of exactly Spin counts as short", repeat(int64(Spin), 50), Spin},
		{"long gaps", repeat(long, 50), shortSpin},
		{"a few long gaps among short ones", append(repeat(short, 20), repeat(long, 5)...), Spin},
		{"one short gap in five", func() []int64 {
			var g []int64
			for i := 0; i < 20; i++ {
				g = append(g, short, long, long, long, long)
			}
			return g
		}(), shortSpin},
		{"one short gap in two", func() []int64 {
			var g []int64
			for i := 0; i < 20; i++ {
				g = append(g, long, short)
			}
			return g
		}(), Spin},
		{"long gaps, then short ones again", append(repeat(long, 50), repeat(short, 10)...), Spin},
	} {
		h := hitShare(hitOne)
		for _, g := range tc.gaps {
			h.add(g)
		}
		if got := h.spin(); got != tc.want {
			t.Errorf("%s: spin %v (share %d/%d), want %v", tc.name, got, h, hitOne, tc.want)
		}
	}
}

// TestForNestedUneven runs loops nested three deep, of uneven chunk
// counts and lengths, posted by several goroutines at once, on 2 and 4
// workers: callers waiting for their last chunk run chunks of loops posted
// after theirs, and the loops must still all finish with every chunk run
// once.
func TestForNestedUneven(t *testing.T) {
	for _, procs := range []int{2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		var total, want atomic.Int64
		var wg sync.WaitGroup
		for c := 0; c < 5; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for rep := 0; rep < 20; rep++ {
					a := 1 + (c+rep)%4
					For(a, func(i int) {
						b := 1 + (i*7+rep)%6
						For(b, func(j int) {
							if (i+j+rep)%5 == 0 {
								time.Sleep(20 * time.Microsecond)
							}
							d := 1 + (i+j+c)%3
							For(d, func(int) { total.Add(1) })
							want.Add(int64(d))
						})
					})
				}
			}()
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
			t.Fatalf("GOMAXPROCS=%d: nested loops did not finish in 60 s", procs)
		}
		runtime.GOMAXPROCS(prev)
		if total.Load() != want.Load() || want.Load() == 0 {
			t.Fatalf("GOMAXPROCS=%d: %d innermost chunks ran, want %d", procs, total.Load(), want.Load())
		}
	}
}

// TestForReleasesLoop checks that nothing a loop's function holds stays
// reachable after For returns, in a process with GOMAXPROCS 1, where no
// worker ever takes a loop off the queue: a buffer the function captured
// is collected.
func TestForReleasesLoop(t *testing.T) {
	if os.Getenv("PAR_RELEASE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestForReleasesLoop$", "-test.v")
		cmd.Env = append(os.Environ(), "PAR_RELEASE_CHILD=1", "GOMAXPROCS=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOMAXPROCS=1: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "the buffer was collected") {
			t.Fatalf("GOMAXPROCS=1: the child did not run the check:\n%s", out)
		}
		return
	}
	if runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("child runs with GOMAXPROCS %d, want 1", runtime.GOMAXPROCS(0))
	}
	wp := runOnBuffer()
	runtime.GC()
	if wp.Value() != nil {
		t.Fatal("the buffer a finished loop's function captured is still reachable after For returned")
	}
	t.Log("the buffer was collected")
}

// runOnBuffer runs a loop whose function captures a buffer of its own and
// returns a weak pointer to the buffer.
func runOnBuffer() weak.Pointer[byte] {
	buf := make([]byte, 1<<20)
	For(4, func(i int) { buf[i] = 1 })
	return weak.Make(&buf[0])
}

// TestRanges checks that Ranges covers [0, n) once with ranges starting at
// multiples of align (the length rounded up to it), at most k of them,
// range i starting at i times the length, and one call for k ≤ 1.
func TestRanges(t *testing.T) {
	for _, c := range []struct{ n, k, align, calls int }{
		{0, 1, 1, 1}, {1, 4, 1, 1}, {10, 1, 1, 1}, {10, 3, 1, 3}, {10, 4, 1, 4},
		{10, 20, 1, 10}, {100, 3, 8, 3}, {100, 8, 16, 7}, {17, 2, 16, 2},
	} {
		var mu sync.Mutex
		seen := make([]int, c.n)
		starts := map[int]int{}
		Ranges(c.n, c.k, c.align, func(i, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			starts[i] = lo
			for j := lo; j < hi; j++ {
				seen[j]++
			}
		})
		if len(starts) != c.calls {
			t.Errorf("n %d, k %d, align %d: %d ranges, want %d", c.n, c.k, c.align, len(starts), c.calls)
		}
		for j, s := range seen {
			if s != 1 {
				t.Errorf("n %d, k %d, align %d: element %d covered %d times", c.n, c.k, c.align, j, s)
			}
		}
		if len(starts) > 1 {
			size := starts[1]
			for i, lo := range starts {
				if lo != i*size || size%c.align != 0 {
					t.Errorf("n %d, k %d, align %d: range %d starts at %d, length %d", c.n, c.k, c.align, i, lo, size)
				}
			}
		}
	}
}
