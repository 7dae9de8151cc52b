package backend

import (
	"slices"
	"strings"
	"sync"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/internal/hugepages"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// plan is when each value of a program dies: the lifetimes behind the
// program's buffer reuse and its memory estimate.
//
// A forward value dies after its last reader in the forward segment, or
// never before release when a backward node or the caller (a root) reads
// it. A backward value of task k's pass dies after its last reader in that
// pass; a root lives until the pass ends. Operands an op does not read
// (argReader) do not count as uses. A value read by an op that may
// return a view of its inputs (any op but ours, see aliases) lives at
// least as long as that op's value.
type plan struct {
	fwdFree [][]int // per position in program.fwd: nodes dying after it
	segs    [][]int // per task: the backward nodes its pass runs, in order
	bwdFree [][][]int
	zeroed  [][]int // per task: backward nodes not run whose zero value is read
	zeroMax int     // elements of the largest zero value
	bytes   []int64 // per node: bytes of its value
	// conc is how many backward passes may run at once (concurrent.go):
	// 1, or up to GOMAXPROCS when the passes' values are small.
	conc int
}

// kept marks a value that lives until release.
const kept = int(^uint(0) >> 1)

// aliases reports whether the op of node i may return a value sharing
// memory with its inputs: any op but this package's kernels, backend/internal/kernels'
// ops and gradient sums, which always return fresh values.
func (p *program) aliases(i int) bool {
	switch p.nodes[i].Op().(type) {
	case intoOp, opsIntoOp:
		return false
	}
	return !p.adds[i]
}

// cheap reports whether node i's value is cheap to recompute from its
// operands (element-wise: Relu, Sigmoid, Mul, SiLU, BatchNormalization with
// running statistics; Concat, a copy), so that the backward passes recompute it rather than keep
// it from the forward pass. Recomputing runs the same op on the same
// values: the same result, bit for bit.
func (p *program) cheap(i int) bool {
	switch op := p.nodes[i].Op().(type) {
	case *graph.KernelOp:
		switch op.Kind {
		case "Relu", "Sigmoid", "Mul", "Concat", "SiLU":
			return true
		}
		return false
	case opsIntoOp:
		return strings.HasPrefix(p.nodes[i].Op().String(), "BatchNormEval{")
	}
	return false
}

// rematBytes is the memory that recomputing the values marked in remat
// saves: the bytes of those a backward node reads, directly or through
// other recomputed values.
func rematBytes(p *program, pl *plan, at []int, remat []bool) int64 {
	seen := make([]bool, len(p.nodes))
	var sum int64
	var walk func(j int)
	walk = func(j int) {
		if at[j] < 0 || !remat[j] || seen[j] {
			return
		}
		seen[j] = true
		sum += pl.bytes[j]
		for _, a := range p.args[j] {
			walk(a)
		}
	}
	p.eachBackwardRead(walk)
	return sum
}

// eachBackwardRead calls f with every value a backward node reads.
func (p *program) eachBackwardRead(f func(j int)) {
	for _, i := range p.bwd {
		for a, j := range p.args[i] {
			if p.reads(i, a) {
				f(j)
			}
		}
	}
}

// argReader is an op that reads only some of its operands (see
// graph.KernelOp.GradReads).
type argReader interface{ ReadsArgs() []bool }

// reads reports whether node i's op reads its a-th operand.
func (p *program) reads(i, a int) bool {
	if r, ok := p.nodes[i].Op().(argReader); ok {
		if m := r.ReadsArgs(); m != nil && a < len(m) {
			return m[a]
		}
	}
	return true
}

// newPlan plans the lifetimes of p's values for m tasks.
func newPlan(p *program, m int) *plan {
	pl := &plan{bytes: make([]int64, len(p.nodes))}
	for i, n := range p.nodes {
		if n.Op() != nil {
			pl.bytes[i] = int64(shape.Numel(n.Shape())) * int64(dtypeSize(n.Dtype()))
		}
	}
	inBwd := make([]bool, len(p.nodes))
	for _, i := range p.bwd {
		inBwd[i] = true
	}
	// Forward segment.
	at := make([]int, len(p.nodes))
	for i := range at {
		at[i] = -1
	}
	for t, i := range p.fwd {
		at[i] = t
	}
	last := make([]int, len(p.nodes))
	for i := range last {
		last[i] = -1
	}
	for t, i := range p.fwd {
		for a, j := range p.args[i] {
			if at[j] >= 0 && p.reads(i, a) {
				last[j] = max(last[j], t)
			}
		}
	}
	// A forward value a backward node reads is kept, unless it is cheap
	// to recompute (remat): then what it is computed from is kept, and
	// each pass recomputes it where it is read.
	remat := make([]bool, len(p.nodes))
	for _, i := range p.fwd {
		remat[i] = !p.roots[i] && p.cheap(i)
	}
	if b := rematBytes(p, pl, at, remat); b < p.opt.rematMinBytes {
		clear(remat) // keeping them costs less memory than it saves time
	}
	var need func(j int)
	need = func(j int) {
		if at[j] < 0 || last[j] == kept {
			return
		}
		if !remat[j] {
			last[j] = kept
			return
		}
		for _, a := range p.args[j] {
			need(a)
		}
	}
	p.eachBackwardRead(need)
	for _, i := range p.fwd {
		if last[i] == kept {
			remat[i] = false // kept anyway (read by a kept value's op, say)
		}
	}
	pl.fwdFree = lifetimes(p, p.fwd, at, last)
	// One backward pass per task.
	pl.segs = make([][]int, m)
	pl.bwdFree = make([][][]int, m)
	pl.zeroed = make([][]int, m)
	for k := 0; k < m; k++ {
		var seg []int
		for i := range at {
			at[i], last[i] = -1, -1
		}
		// The pass, with each recomputed forward value scheduled just
		// before its first reader (after what it is computed from).
		var add func(j int)
		add = func(j int) {
			if !remat[j] || at[j] >= 0 {
				return
			}
			for _, a := range p.args[j] {
				add(a)
			}
			at[j] = len(seg)
			seg = append(seg, j)
		}
		for _, i := range p.bwd {
			if p.deps[i][k] {
				for a, j := range p.args[i] {
					if p.reads(i, a) {
						add(j)
					}
				}
				at[i] = len(seg)
				seg = append(seg, i)
			}
		}
		zero := map[int]bool{}
		for t, i := range seg {
			for a, j := range p.args[i] {
				if !p.reads(i, a) {
					continue
				}
				switch {
				case at[j] >= 0:
					last[j] = max(last[j], t)
				case inBwd[j]:
					zero[j] = true
				}
			}
		}
		for _, i := range p.bwd {
			if at[i] < 0 && p.roots[i] {
				zero[i] = true
			}
		}
		for _, i := range p.bwd {
			if zero[i] {
				pl.zeroed[k] = append(pl.zeroed[k], i)
				pl.zeroMax = max(pl.zeroMax, shape.Numel(p.nodes[i].Shape()))
			}
		}
		pl.segs[k] = seg
		pl.bwdFree[k] = lifetimes(p, seg, at, last)
	}
	pl.conc = concurrentPasses(pl, m, slices.Contains(remat, true), p.opt.concurrentPassMaxBytes)
	return pl
}

// lifetimes turns the last readers (last[i]: a position in seg, kept, or
// -1 for none) of seg's values (at[i]: position in seg, -1 outside) into
// the lists of values dying after each position. Roots are kept; a value
// read by an aliasing op lives as long as that op's value.
func lifetimes(p *program, seg, at, last []int) [][]int {
	for t, i := range seg {
		if p.roots[i] {
			last[i] = kept
		} else if last[i] < 0 {
			last[i] = t // read by nobody: dies at once
		}
	}
	for t := len(seg) - 1; t >= 0; t-- {
		i := seg[t]
		if !p.aliases(i) {
			continue
		}
		for _, j := range p.args[i] {
			if at[j] >= 0 {
				last[j] = max(last[j], last[i])
			}
		}
	}
	free := make([][]int, len(seg))
	for _, i := range seg {
		if l := last[i]; l != kept {
			free[l] = append(free[l], i)
		}
	}
	return free
}

// peak is the planned largest total of live values over a forward pass
// and the m backward passes, in bytes (the shared zero backing included;
// inputs and parameters, bound outside the program, not).
func (pl *plan) peak(p *program) int64 {
	zero := int64(0)
	if len(pl.segs) > 0 && len(p.bwd) > 0 {
		zero = int64(pl.zeroMax) * int64(dtypeSize(p.nodes[p.bwd[0]].Dtype()))
	}
	return pl.peakOf(p, pl.bytes, zero)
}

// pooledPeak is the largest total, in float32 elements, of the live values
// that live in pool buffers (p.pooled): what the pool needs to hold at
// once, its limit.
func (pl *plan) pooledPeak(p *program) int64 {
	elems := make([]int64, len(p.nodes))
	for i := range p.nodes {
		if p.pooled(i) {
			elems[i] = int64(p.poolLen(i))
		}
	}
	return pl.peakOf(p, elems, 0)
}

// peakOf is the largest total of size over the live values of a forward
// pass and the m backward passes, with base added during the backward
// passes; with pl.conc passes at once, each is counted at the largest
// pass's rise.
func (pl *plan) peakOf(p *program, size []int64, base int64) int64 {
	var cur, top int64
	for t, i := range p.fwd {
		cur += size[i]
		top = max(top, cur)
		for _, j := range pl.fwdFree[t] {
			cur -= size[j]
		}
	}
	return max(top, base+cur+int64(max(pl.conc, 1))*pl.passRise(size))
}

// passRise is the largest total of size over the live values of one
// backward pass, above what the forward pass leaves.
func (pl *plan) passRise(size []int64) int64 {
	var rise int64
	for k, seg := range pl.segs {
		cur := int64(0)
		for t, i := range seg {
			cur += size[i]
			rise = max(rise, cur)
			for _, j := range pl.bwdFree[k][t] {
				cur -= size[j]
			}
		}
	}
	return rise
}

// dtypeSize is the size in bytes of one element of dt (8 when unknown).
func dtypeSize(dt tensor.Dtype) int {
	if s := int(dt.Size()); s > 0 {
		return s
	}
	return 8
}

// zeroBacking holds the one read-only zero array behind every zero value
// of a program's backward passes (no op writes into its inputs).
type zeroBacking struct {
	f32 []float32
	f64 []float64
}

// value is a zero of n's type and shape over the shared backing, grown to
// at least size elements when it is shorter.
func (z *zeroBacking) value(n graph.Node, size int) G.Value {
	k := shape.Numel(n.Shape())
	if n.IsScalar() {
		if n.Dtype() == tensor.Float32 {
			return G.NewF32(0)
		}
		return G.NewF64(0)
	}
	switch n.Dtype() {
	case tensor.Float32:
		if len(z.f32) < k {
			z.f32 = make([]float32, max(k, size))
		}
		return tensor.New(tensor.WithShape(n.Shape()...), tensor.WithBacking(z.f32[:k:k]))
	case tensor.Float64:
		if len(z.f64) < k {
			z.f64 = make([]float64, max(k, size))
		}
		return tensor.New(tensor.WithShape(n.Shape()...), tensor.WithBacking(z.f64[:k:k]))
	}
	return tensor.New(tensor.Of(n.Dtype()), tensor.WithShape(n.Shape()...))
}

// bufPool keeps the float32 buffers of dead values for reuse. held counts
// the elements of every buffer it handed out or adopted, live or free.
// With a limit (the largest pooledPeak of the programs drawing from it,
// with some room: fit),
// a get that finds no fitting free buffer first drops free ones, largest
// first, while held would exceed the limit: buffers of sizes the passes
// no longer ask for go to the garbage collector instead of staying beside
// new ones, so that the pool holds about the planned values, not their
// sum over every size ever asked for.
//
// A buffer lent between two evaluations (lend: finetune.ScratchLender)
// stays the pool's as a slab: once given back, the gets that find no free
// buffer take pieces carved out of it instead of new buffers, so that the
// memory of the buffers it displaced serves the next evaluation without
// being allocated, cleared and collected again every step.
//
// The free buffers are kept by capacity (free): a step asks again for the
// sizes it asked for before, so a get usually finds one of exactly its
// size without looking at the others. A scan of every free buffer per get,
// under the lock that the concurrent backward passes share, was 2–3% of a
// small model's step (ShuffleNet, MobileNetV3 at 64×64: hundreds of free
// buffers, thousands of gets a step).
type bufPool struct {
	mu sync.Mutex // concurrent backward passes share the pool
	// free holds the free buffers by capacity, each with the float32
	// tensor that wrapped it in the value that died (putDense), or nil:
	// the next op writing its result into the buffer returns that tensor
	// again when the result has its shape (graph.Value32) instead of making one
	// (a Gorgonia tensor is several allocations: half of the bytes a small
	// model's step allocated). The tensor lives as long as its buffer
	// stays in the pool, no longer.
	free  map[int][]freeBuf
	nfree int   // buffers in free
	held  int64 // elements
	limit int64 // elements; 0: none
	// slabs are the buffers lent out (lend) and given back: while given
	// back, gets that find no free buffer carve pieces out of them
	// instead of allocating (carve), so that the lent buffers' memory
	// serves the evaluations' values between loans rather than costing
	// activation buffers that the next evaluation allocates again.
	// pieces maps the first element of every piece carved and not yet
	// reclaimed to its slab and length (nil when no slab was ever made).
	slabs  []*slab
	pieces map[*float32]piece
	// noCarve turns carving off (tests compare against it): lent buffers
	// come and go as ordinary ones.
	noCarve bool
	made    int64 // elements of every buffer and slab allocated
}

// slab is a buffer the pool lends (bufPool.lend) and, once given back,
// carves pieces out of. Its pieces never overlap: each is carved once,
// past off, and the slab is reclaimed whole (off back to 0, lent again)
// only when every piece is back (out is 0) and none is in the free
// lists any more (reclaim). Its elements count in held once, carved or
// not.
type slab struct {
	buf    []float32
	off    int  // elements carved since the slab was last reclaimed
	out    int  // pieces handed out and not yet back
	lent   bool // lent: nothing is carved
	orphan bool // no longer the pool's: its pieces come back as ordinary buffers
}

// piece is a piece carved from slab s, of n elements.
type piece struct {
	s *slab
	n int
}

// freeBuf is a free buffer (its whole capacity) and the tensor that last
// wrapped it, or nil; s is the slab it was carved from, or nil.
type freeBuf struct {
	f []float32
	d *tensor.Dense
	s *slab
}

// getDense is get for a value of shape s, also returning the tensor that
// wrapped the buffer in the value it last held, when there is one
// (putDense). Among the free buffers of the capacity get would take, it
// takes one whose tensor has shape s and n values, when there is one.
func (b *bufPool) getDense(n int, s []int) ([]float32, *tensor.Dense) {
	if n <= 0 {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.fitting(n)
	if c < 0 {
		return b.fresh(n), nil
	}
	l := b.free[c]
	i := len(l) - 1
	for j := i; j >= 0; j-- {
		if d := l[j].d; d != nil && d.DataSize() == n && d.Shape().Eq(tensor.Shape(s)) {
			i = j
			break
		}
	}
	d := l[i].d
	return b.handOut(c, i)[:n], d
}

// putDense is put for the buffer f of a value v that dies: when v is a
// float32 tensor backed by f, it stays with f (getDense). Nothing may read
// v or f afterwards.
func (b *bufPool) putDense(f []float32, v G.Value) {
	var d *tensor.Dense
	if t, ok := v.(*tensor.Dense); ok && len(f) > 0 {
		if x, ok := graph.Data32(t); ok && len(x) > 0 && &x[0] == &f[0] {
			d = t
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(f, d)
}

// get returns a buffer of n elements (contents undefined): the smallest
// free one holding n with at most 1/8 to spare, else a new one.
func (b *bufPool) get(n int) []float32 {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.getLocked(n)
}

// getLocked is get with b.mu held.
func (b *bufPool) getLocked(n int) []float32 {
	c := b.fitting(n)
	if c < 0 {
		return b.fresh(n)
	}
	return b.handOut(c, len(b.free[c])-1)[:n]
}

// handOut is take for a buffer a caller will use: a slab's piece counts
// as out until it comes back.
func (b *bufPool) handOut(c, i int) []float32 {
	if s := b.free[c][i].s; s != nil {
		s.out++
	}
	return b.take(c, i)
}

// fitting is the smallest capacity of a free buffer holding n with at most
// 1/8 to spare, or −1: n itself when one of exactly n is free, without
// looking at the others.
func (b *bufPool) fitting(n int) int {
	if len(b.free[n]) > 0 {
		return n
	}
	best := -1
	for c, l := range b.free {
		if len(l) > 0 && c >= n && c <= n+n/8 && (best < 0 || c < best) {
			best = c
		}
	}
	return best
}

// fresh returns a buffer of n that no free buffer fits: a piece carved
// from a given-back slab with room for it, else one carved from a slab
// reclaimed for it (every piece back and free, none of them fitting),
// else a new one, first dropping free buffers (not slab pieces: dropping
// those frees nothing), largest first, while held would exceed the limit.
func (b *bufPool) fresh(n int) []float32 {
	if f := b.carve(n); f != nil {
		return f
	}
	b.dropOver(int64(n))
	b.held += int64(n)
	b.made += int64(n)
	buf := make([]float32, n)
	hugepages.Advise(buf)
	return buf
}

// dropOver drops free buffers that are not slab pieces, largest first,
// while held plus n would exceed the limit.
func (b *bufPool) dropOver(n int64) {
	for b.limit > 0 && b.held+n > b.limit {
		big, at := -1, -1
		for c, l := range b.free {
			if c <= big {
				continue
			}
			for i := len(l) - 1; i >= 0; i-- {
				if l[i].s == nil {
					big, at = c, i
					break
				}
			}
		}
		if big < 0 {
			return
		}
		b.held -= int64(big)
		b.take(big, at)
	}
}

// carve returns a piece of n elements of a given-back slab, or nil when no
// slab has room for it and none can be reclaimed for it.
func (b *bufPool) carve(n int) []float32 {
	if b.noCarve {
		return nil
	}
	var s *slab
	for _, t := range b.slabs {
		if !t.lent && len(t.buf)-t.off >= n {
			s = t
			break
		}
	}
	if s == nil {
		for _, t := range b.slabs {
			if !t.lent && t.out == 0 && len(t.buf) >= n {
				b.reclaim(t)
				s = t
				break
			}
		}
	}
	if s == nil {
		return nil
	}
	f := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	s.out++
	b.pieces[&f[0]] = piece{s, n}
	return f
}

// reclaim takes every piece of slab s, which has none out, back out of
// the free lists, so that s is one buffer again with nothing carved.
func (b *bufPool) reclaim(s *slab) {
	b.unfree(s)
	s.off = 0
}

// unfree removes slab s's free pieces from the free lists and forgets
// them (pieces).
func (b *bufPool) unfree(s *slab) {
	for c, l := range b.free {
		for i := len(l) - 1; i >= 0; i-- {
			if l[i].s == s {
				delete(b.pieces, &l[i].f[0])
				b.take(c, i)
				l = b.free[c]
			}
		}
	}
}

// lend returns a buffer of n elements (contents undefined) that the caller
// holds until it gives it back (giveBack), between two evaluations: a
// given-back slab of at least n with every piece back, reclaimed, else a
// new slab, first dropping free buffers while held would exceed the limit.
// A slab with pieces still out at a loan (nothing should hold one between
// evaluations) is orphaned rather than waited for: its pieces return as
// ordinary buffers.
func (b *bufPool) lend(n int) []float32 {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noCarve {
		return b.getLocked(n)
	}
	var s *slab
	for _, t := range b.slabs {
		switch {
		case t.lent:
		case t.out > 0:
			b.orphan(t)
		case len(t.buf) >= n && (s == nil || len(t.buf) < len(s.buf)):
			s = t
		}
	}
	b.slabs = slices.DeleteFunc(b.slabs, func(t *slab) bool { return t.orphan })
	if s == nil {
		b.dropOver(int64(n))
		b.held += int64(n)
		b.made += int64(n)
		s = &slab{buf: make([]float32, n)}
		hugepages.Advise(s.buf)
		b.slabs = append(b.slabs, s)
		if b.pieces == nil {
			b.pieces = map[*float32]piece{}
		}
	} else {
		b.reclaim(s)
	}
	s.lent = true
	return s.buf[:n:n]
}

// giveBack returns f, which lend gave, to the pool: its slab serves the
// gets that follow. Nothing may read or write f afterwards. A buffer that
// is not a lent slab is put.
func (b *bufPool) giveBack(f []float32) {
	if len(f) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slabs {
		if s.lent && &s.buf[0] == &f[0] {
			s.lent = false
			s.off = 0
			return
		}
	}
	b.add(f, nil)
}

// orphan makes slab s no longer the pool's: its free pieces leave the
// free lists, and its elements leave held but for the pieces still out,
// which are forgotten (pieces) and come back (add) as ordinary buffers.
func (b *bufPool) orphan(s *slab) {
	b.unfree(s)
	b.held -= int64(len(s.buf))
	for k, pc := range b.pieces {
		if pc.s == s {
			b.held += int64(pc.n)
			delete(b.pieces, k)
		}
	}
	s.orphan = true
}

// take removes free buffer i of capacity c (and its tensor) from the pool
// and returns it.
func (b *bufPool) take(c, i int) []float32 {
	l := b.free[c]
	f := l[i].f
	last := len(l) - 1
	l[i], l[last] = l[last], freeBuf{}
	b.free[c] = l[:last]
	b.nfree--
	return f
}

// put returns f to the pool; nothing may read or write it afterwards.
func (b *bufPool) put(f []float32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(f, nil)
}

// add puts f, wrapped by d (or nil), among the free buffers: a slab's
// piece comes back (out counts one less), and a piece of an orphaned slab
// (orphan) or any other buffer is an ordinary one.
func (b *bufPool) add(f []float32, d *tensor.Dense) {
	c := cap(f)
	if c == 0 {
		return
	}
	f = f[:c]
	var s *slab
	if pc, ok := b.pieces[&f[0]]; ok {
		s = pc.s
		s.out--
	}
	if b.free == nil {
		b.free = map[int][]freeBuf{}
	}
	b.free[c] = append(b.free[c], freeBuf{f, d, s})
	b.nfree++
}

// adopt counts f, a result buffer an op allocated itself, as held: it
// comes to the pool when its value dies.
func (b *bufPool) adopt(f []float32) {
	b.mu.Lock()
	b.held += int64(cap(f))
	b.mu.Unlock()
}

// drop empties the pool of free buffers and of its slabs but the ones
// lent (their memory comes back with them).
func (b *bufPool) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slabs {
		if !s.lent {
			b.orphan(s)
		}
	}
	b.slabs = slices.DeleteFunc(b.slabs, func(s *slab) bool { return s.orphan })
	for c, l := range b.free {
		b.held -= int64(c * len(l))
	}
	clear(b.free)
	b.nfree = 0
}

// poolSlack bounds, in elements, the room the pool's limit leaves above the
// pooled peak: a quarter of the peak, at most 16 Mi elements (64 MiB).
// With no room, the sizes a step asks for do not all fit beside each other,
// and every step dropped and allocated buffers again (BenchmarkStep/lenet2:
// 36 MB allocated per step, 25 MB of it new pool buffers that the allocator
// zeroes; with the room, 10.4 MB in all); the bound keeps a large model's
// pool near its plan.
const poolSlack = 16 << 20

// fit raises the limit to n elements, the pooled peak of a program drawing
// from b, plus the room poolSlack gives.
func (b *bufPool) fit(n int64) {
	b.mu.Lock()
	b.limit = max(b.limit, n+min(n/4, poolSlack))
	b.mu.Unlock()
}
