// Package par runs the chunks of a loop on a fixed set of worker
// goroutines that live as long as the process, shared by the backend's
// kernels (backend, backend/internal/kernels, backend/internal/gemm) and png's column
// loops over the Jacobian.
//
// Starting goroutines for every parallel loop, as the kernels did, costs a
// goroutine creation and a thread wake-up (a futex call) per chunk and
// puts the caller to sleep while the chunks run: for a model made of many
// small ops (the small MTAN's step is about a thousand of them) that was a
// tenth of the step's CPU time. Here the caller runs chunks itself, idle
// workers spin for a short while (Spin) before they sleep, so that the
// next loop of a run of small ops finds them awake, and a caller whose
// chunks are all taken spins briefly before it sleeps too. A worker whose
// recent idle gaps were mostly longer than Spin spins only shortSpin: its
// spins would end in sleep anyway.
//
// Chunks are taken, never assigned: a chunk no worker takes is run by the
// caller, so a loop inside a chunk (nested parallelism) cannot deadlock,
// and loops posted by several goroutines at once share the workers.
package par

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Spin is how long an idle worker, or a caller waiting for the last of its
// chunks, keeps polling before it sleeps. A few tens of microseconds cover
// the gap between two kernels of a step (a small model's op takes 5–50 µs
// on one core), so the next loop finds the worker awake instead of paying a
// futex wake-up and the thread's start (BenchmarkForGaps); longer only
// burns a core that the garbage collector or another process could use.
// On two cores, 20 µs took 5–9% less CPU a `bench step` of the ViT,
// ConvNeXt and ShuffleNet fixtures than 50 µs, but made the small MTAN's
// step 5–8% longer on a quiet machine (interleaved runs): its kernels'
// gaps are longer than 20 µs. It is a time, not a share of the cores: every idle worker spins at most
// this long after its last chunk, however many there are. What it costs is
// bounded by the loops that post work: kernels give a chunk to a worker
// only for enough work to outweigh the hand-over (the kernels' minChunkWork and,
// for loops of matrix products, minProductWork; backend's elemChunk;
// gemm's parallelMin), so a run of tiny ops leaves the workers asleep
// rather than spinning after each one.
const Spin = 50 * time.Microsecond

// shortSpin is how long an idle worker polls instead of Spin while few of
// its recent idle gaps (the time from finishing its last chunk to the next
// loop's post) were short enough for Spin to bridge: under a quarter of
// them, by an average over the last eight or so (hitShare). A model whose
// parallel loops are far apart (the ConvNeXt fixture's: 3% of gaps under
// 50 µs; ShuffleNet's: 16%) otherwise burns 50 µs of a core after nearly
// every loop and is woken by a futex all the same, while the small MTAN's
// (58% under 50 µs) keep the full spin. A few microseconds still catch a
// loop posted right after the last one.
const shortSpin = 5 * time.Microsecond

// Idle gaps are measured on one monotonic clock: nanoseconds since epoch.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// hitShare is the fixed-point (1/1024) running average of idle gaps that
// were at most Spin, each new gap weighing an eighth.
type hitShare int32

const (
	hitOne  = 1024
	hitFull = hitOne / 4 // at least this share of short gaps: spin for Spin
)

// add counts one idle gap.
func (h *hitShare) add(gap int64) {
	v := int32(0)
	if gap <= int64(Spin) {
		v = hitOne
	}
	*h += hitShare((v - int32(*h)) / 8)
}

// spin is how long to poll before sleeping.
func (h hitShare) spin() time.Duration {
	if h >= hitFull {
		return Spin
	}
	return shortSpin
}

// job is one loop: chunks [0, n) of f.
type job struct {
	f    func(i int)
	n    int32
	next atomic.Int32 // next chunk to take
	left atomic.Int32 // chunks not yet finished
	fin  chan struct{}
	seq  uint64 // pool.posted after this loop's post
	mu   sync.Mutex
	pnc  any // the first panic of a chunk, re-raised in the caller
}

var pool struct {
	mu      sync.Mutex
	jobs    []*job // loops with chunks left to take
	started int    // workers started
	asleep  int    // workers blocked on wake
	wake    chan struct{}
	posted  atomic.Uint64 // bumped whenever a loop is posted
	postAt  atomic.Int64  // now() at the latest post
}

// For calls f(i) for every i in [0, n), each exactly once, on the calling
// goroutine and on up to n−1 workers at once, and returns when all calls
// have returned. A panic in any call is re-raised by For on the calling
// goroutine (the first one, when several panic). Callers that pass
// n ≤ GOMAXPROCS get the chunk index as a worker number: no two calls with
// the same i run at once.
func For(n int, f func(i int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	j := &job{f: f, n: int32(n), fin: make(chan struct{})}
	j.left.Store(int32(n))
	post(j, n-1)
	j.run()
	j.wait()
	drop(j)
	if j.pnc != nil {
		panic(j.pnc)
	}
}

// Ranges calls f(i, lo, hi) for the contiguous ranges [lo, hi) that cut
// [0, n) into at most k of equal length, each length a multiple of align
// (the last one's end aside), through For, and returns when all have
// returned. Range i always starts at i times the length, so a reduction
// kept per i and added in order depends on n, k and align alone.
func Ranges(n, k, align int, f func(i, lo, hi int)) {
	if k <= 1 || n <= 1 {
		f(0, 0, n)
		return
	}
	size := (n + k - 1) / k
	size = (size + align - 1) / align * align
	For((n+size-1)/size, func(i int) { f(i, i*size, min((i+1)*size, n)) })
}

// Posted is the number of loops For has handed to the workers since the
// process started (a loop of one chunk runs on the caller and is not
// counted): kernels' tests read it to check that a loop too small to pay
// for a worker's wake-up stays on the caller.
func Posted() uint64 { return pool.posted.Load() }

// post makes j's chunks available to the workers, starting workers up to
// GOMAXPROCS−1 and waking up to want sleeping ones.
func post(j *job, want int) {
	p := &pool
	p.mu.Lock()
	if p.wake == nil {
		// One token a sleeping worker woken: room for more workers than
		// machines this runs on have cores; beyond it a send only waits
		// until a woken worker takes its token, which needs no lock.
		p.wake = make(chan struct{}, 1024)
	}
	for p.started < runtime.GOMAXPROCS(0)-1 {
		p.started++
		go worker()
	}
	p.jobs = append(p.jobs, j)
	p.postAt.Store(now())
	j.seq = p.posted.Add(1)
	for ; want > 0 && p.asleep > 0; want-- {
		p.asleep--
		p.wake <- struct{}{}
	}
	p.mu.Unlock()
}

// take returns a loop with chunks left, or nil.
func take() *job {
	p := &pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.jobs) > 0 {
		j := p.jobs[0]
		if j.next.Load() < j.n {
			return j
		}
		p.jobs[0] = nil
		p.jobs = p.jobs[1:]
	}
	return nil
}

// drop removes j, every chunk of which has finished, from the loops
// waiting for workers. Workers remove a loop only when they next look for
// one, and with no worker awake (or none at all: GOMAXPROCS 1) nobody
// looks: the queue would keep f, and all that f holds (a step's Jacobian,
// a solver's scratch), reachable after For returned.
func drop(j *job) {
	p := &pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.jobs, j); i >= 0 {
		p.jobs = slices.Delete(p.jobs, i, i+1)
	}
}

// takeAfter returns a loop posted after the seq-th with chunks left, or
// nil.
func takeAfter(seq uint64) *job {
	p := &pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range p.jobs {
		if j.seq > seq && j.next.Load() < j.n {
			return j
		}
	}
	return nil
}

// run takes and runs j's chunks until none is left to take.
func (j *job) run() {
	for j.runOne() {
	}
}

// runOne takes and runs one of j's chunks, and says whether there was one.
func (j *job) runOne() bool {
	i := j.next.Add(1) - 1
	if i >= j.n {
		return false
	}
	j.call(int(i))
	if j.left.Add(-1) == 0 {
		close(j.fin)
	}
	return true
}

// call runs chunk i, keeping a panic for the caller.
func (j *job) call(i int) {
	defer func() {
		if r := recover(); r != nil {
			j.mu.Lock()
			if j.pnc == nil {
				j.pnc = r
			}
			j.mu.Unlock()
		}
	}()
	j.f(i)
}

// wait returns when every chunk of j has finished: it polls for Spin, then
// sleeps.
//
// While it polls it runs chunks of loops posted after its own: a caller
// whose backward pass ended first helps the other task's pass, still
// running beside it, with its next loops, instead of leaving its core
// idle. Loops posted before its own are left alone: one of them may be
// the loop whose chunk this caller is inside (a whole pass of eachPass),
// which would then wait behind it.
func (j *job) wait() {
	if j.left.Load() == 0 {
		return
	}
	seen := j.seq
	deadline := now() + int64(Spin)
	for k := 0; ; k++ {
		if j.left.Load() == 0 {
			return
		}
		if k&255 != 255 { // the clock every 256 polls: a poll is nanoseconds, a clock read tens
			continue
		}
		if s := pool.posted.Load(); s != seen {
			if o := takeAfter(j.seq); o != nil {
				o.runOne() // one chunk: then back to whether j is done
				deadline = now() + int64(Spin)
				continue
			}
			seen = s
		}
		if now() > deadline {
			break
		}
	}
	<-j.fin
}

// worker runs posted chunks for the life of the process.
func worker() {
	p := &pool
	h := hitShare(hitOne) // start spinning fully: the first loops of a run come in bursts
	for {
		if j := take(); j != nil {
			j.run()
			continue
		}
		seen := p.posted.Load()
		idle := now()
		deadline := idle + int64(h.spin())
		for k := 0; p.posted.Load() == seen; k++ {
			if k&255 == 255 && now() > deadline {
				break
			}
		}
		if p.posted.Load() != seen {
			h.add(p.postAt.Load() - idle)
			continue
		}
		p.mu.Lock()
		if len(p.jobs) > 0 {
			p.mu.Unlock()
			continue
		}
		p.asleep++
		p.mu.Unlock()
		<-p.wake
		h.add(p.postAt.Load() - idle)
	}
}
