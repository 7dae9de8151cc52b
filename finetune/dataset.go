package finetune

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// Dataset is a set of named arrays (model inputs and loss targets) sharing
// their first dimension, the example index. A Dataset with no arrays (or a
// nil *Dataset) stands for a problem without data: every step then gets one
// empty batch.
//
// A Dataset bound to a folder of per-example files (BindFolder) holds in
// Arrays each array's header only (element type and shape, no values):
// Take and Rows read the files of a batch's examples, and a change of an
// array's Type in Arrays converts the values read. Such a Dataset is
// FileBacked.
type Dataset struct {
	Arrays map[string]*importer.Tensor
	files  *fileView
}

// FileBacked reports whether d reads its examples from files batch by
// batch (BindFolder) instead of holding them.
func (d *Dataset) FileBacked() bool { return d != nil && d.files != nil }

// Folder is the folder a FileBacked d reads (nil when d is held in
// memory).
func (d *Dataset) Folder() *Folder {
	if d == nil || d.files == nil {
		return nil
	}
	return d.files.folder
}

// ExampleFiles lists the files example i of a FileBacked d is read from,
// sorted (nil when d is held in memory).
func (d *Dataset) ExampleFiles(i int) []string {
	if d == nil || d.files == nil {
		return nil
	}
	var out []string
	for _, k := range d.Names() {
		out = append(out, d.files.arrays[k].file(i))
	}
	sort.Strings(out)
	return out
}

// Clone returns a Dataset over the same arrays (and files) whose Arrays
// map is d's copied, so that changing an entry leaves d alone.
func (d *Dataset) Clone() *Dataset {
	if d == nil {
		return nil
	}
	out := &Dataset{Arrays: make(map[string]*importer.Tensor, len(d.Arrays)), files: d.files}
	for k, v := range d.Arrays {
		out.Arrays[k] = v
	}
	return out
}

// Only returns the Dataset of d's array name alone.
func (d *Dataset) Only(name string) *Dataset {
	return &Dataset{Arrays: map[string]*importer.Tensor{name: d.Arrays[name]}, files: d.files}
}

// Prefix returns the Dataset of d's first n examples (all of them when d
// has no more), sharing d's values or files.
func (d *Dataset) Prefix(n int) *Dataset {
	if d == nil || n >= d.Len() {
		return d
	}
	out := &Dataset{Arrays: map[string]*importer.Tensor{}}
	for k, a := range d.Arrays {
		if d.files != nil {
			out.Arrays[k] = &importer.Tensor{Name: a.Name, Type: a.Type, Shape: append([]int{n}, a.Shape[1:]...)}
		} else {
			out.Arrays[k] = prefixRows(a, n)
		}
	}
	if d.files != nil {
		v := *d.files
		v.n = n
		out.files = &v
	}
	return out
}

// NewDataset returns a Dataset over arrays (not copied) after Validate.
func NewDataset(arrays map[string]*importer.Tensor) (*Dataset, error) {
	d := &Dataset{Arrays: arrays}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// Names returns the array names, sorted.
func (d *Dataset) Names() []string {
	if d == nil {
		return nil
	}
	names := make([]string, 0, len(d.Arrays))
	for k := range d.Arrays {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Empty reports whether d holds no arrays.
func (d *Dataset) Empty() bool { return d == nil || len(d.Arrays) == 0 }

// Len returns the number of examples (0 for an empty dataset). It assumes
// that d is valid.
func (d *Dataset) Len() int {
	for _, name := range d.Names() {
		if t := d.Arrays[name]; t != nil && len(t.Shape) > 0 {
			return t.Shape[0]
		}
	}
	return 0
}

// Validate checks that every array has a first dimension, holds as many
// values as its shape says, and that all arrays have the same number of
// examples. Its error names the arrays that disagree.
func (d *Dataset) Validate() error {
	first := ""
	for _, name := range d.Names() {
		t := d.Arrays[name]
		switch {
		case t == nil:
			return fmt.Errorf("finetune: dataset array %q is nil", name)
		case len(t.Shape) == 0:
			return fmt.Errorf("finetune: dataset array %q is a scalar; want a first dimension indexing examples", name)
		case d.files != nil && d.files.arrays[name] == nil:
			return fmt.Errorf("finetune: dataset array %q has neither values nor files", name)
		case d.files == nil && storedLen(t) != t.Len():
			return fmt.Errorf("finetune: dataset array %q has %d values for shape %v (%d)", name, storedLen(t), t.Shape, t.Len())
		}
		if first == "" {
			first = name
			continue
		}
		if n, n0 := t.Shape[0], d.Arrays[first].Shape[0]; n != n0 {
			return fmt.Errorf("finetune: dataset arrays %q (%d examples) and %q (%d examples) differ in their first dimension", first, n0, name, n)
		}
	}
	return nil
}

func storedLen(t *importer.Tensor) int {
	switch {
	case t.F32 != nil:
		return len(t.F32)
	case t.F64 != nil:
		return len(t.F64)
	}
	return len(t.I64)
}

func batchesPerEpoch(n, size int) int {
	if n == 0 {
		return 1
	}
	return (n + size - 1) / size
}

// Batches returns the example indices of every batch of one epoch: a
// permutation of 0..N−1 drawn from (seed, epoch) alone, cut into batches
// of size (the last may be smaller). The same seed and epoch always give
// the same batches, which is what makes a resumed run bit-identical. An
// empty dataset gives one empty batch.
func (d *Dataset) Batches(seed int64, epoch, size int) [][]int {
	n := d.Len()
	if n == 0 {
		return [][]int{nil}
	}
	if size <= 0 {
		panic(fmt.Sprintf("finetune: Batches: batch size %d", size))
	}
	perm := rand.New(rand.NewPCG(uint64(seed), uint64(epoch))).Perm(n)
	out := make([][]int, 0, batchesPerEpoch(n, size))
	for i := 0; i < n; i += size {
		out = append(out, perm[i:min(i+size, n)])
	}
	return out
}

// Take returns the batch made of the examples idx, in that order; the
// rows are copied, or read from their files for a FileBacked d (whose
// errors, a file gone or changed since it was checked, name the file).
// An empty dataset gives an empty batch.
func (d *Dataset) Take(idx []int) (Batch, error) {
	if d.files != nil {
		return d.files.take(d, idx)
	}
	b := Batch{}
	for _, name := range d.Names() {
		b[name] = takeRows(d.Arrays[name], idx)
	}
	return b, nil
}

// Rows returns the batch of examples i..j−1 (Take).
func (d *Dataset) Rows(i, j int) (Batch, error) {
	if i < 0 || j > d.Len() || i > j {
		panic(fmt.Sprintf("finetune: Slice [%d:%d] of a dataset of %d examples", i, j, d.Len()))
	}
	idx := make([]int, j-i)
	for k := range idx {
		idx[k] = i + k
	}
	return d.Take(idx)
}

// Subset is Take for a dataset held in memory, which cannot fail; a read
// error of a FileBacked dataset panics (use Take).
func (d *Dataset) Subset(idx []int) Batch {
	b, err := d.Take(idx)
	if err != nil {
		panic(err)
	}
	return b
}

// Slice is Rows for a dataset held in memory (see Subset).
func (d *Dataset) Slice(i, j int) Batch {
	b, err := d.Rows(i, j)
	if err != nil {
		panic(err)
	}
	return b
}

func takeRows(t *importer.Tensor, idx []int) *importer.Tensor {
	row := 1
	for _, s := range t.Shape[1:] {
		row *= s
	}
	shape := append([]int{len(idx)}, t.Shape[1:]...)
	out := &importer.Tensor{Name: t.Name, Type: t.Type, Shape: shape}
	switch {
	case t.F32 != nil:
		out.F32 = make([]float32, len(idx)*row)
		for k, i := range idx {
			copy(out.F32[k*row:(k+1)*row], t.F32[i*row:(i+1)*row])
		}
	case t.F64 != nil:
		out.F64 = make([]float64, len(idx)*row)
		for k, i := range idx {
			copy(out.F64[k*row:(k+1)*row], t.F64[i*row:(i+1)*row])
		}
	default:
		out.I64 = make([]int64, len(idx)*row)
		for k, i := range idx {
			copy(out.I64[k*row:(k+1)*row], t.I64[i*row:(i+1)*row])
		}
	}
	return out
}

// Bytes is the memory d's arrays hold (the values of arrays several
// datasets share count in each). A FileBacked d holds none but, while a
// batch is read, the file being decoded: Bytes is the largest such file
// decoded (the batch itself is the step's).
func (d *Dataset) Bytes() int64 {
	if d == nil {
		return 0
	}
	if d.files != nil {
		return d.files.bytes()
	}
	var n int64
	for _, t := range d.Arrays {
		n += heldBytes(t)
	}
	return n
}

// heldBytes is the memory t's values take: none for values mapped from
// their file (npz.Mapped), which the kernel pages in and out.
func heldBytes(t *importer.Tensor) int64 {
	if t == nil || npz.Mapped(t) {
		return 0
	}
	return 4*int64(len(t.F32)) + 8*int64(len(t.F64)) + 8*int64(len(t.I64))
}
