package finetune

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// Prefixes of the data source specs of per-example folders (ParseSource).
const (
	folderPrefix = "folder:"
	nyuv2Prefix  = "nyuv2:"
)

// Kinds of Source.
const (
	// KindFolder is a folder of arrays kept one .npy file per example
	// (OpenFolder).
	KindFolder = "folder"
	// KindNYUv2 is a split of NYUv2 as MTAN's preprocessing leaves it
	// (OpenFolder).
	KindNYUv2 = "nyuv2"
)

// nyuv2Arrays are the subfolders of an NYUv2 split, in MTAN's order.
var nyuv2Arrays = []string{"image", "label", "depth", "normal"}

// Folder is a data set kept as one NumPy file per example: a directory
// whose subfolders are its arrays, each holding 0.npy, 1.npy, … N−1.npy,
// one example each. OpenFolder reads every file's header, never its
// values; a Dataset bound to it (BindFolder) reads the files of a batch's
// examples when the batch is taken, so the set never has to fit in
// memory.
type Folder struct {
	// Spec is the source spec; Dir the directory; Kind KindFolder or
	// KindNYUv2.
	Spec, Dir, Kind string
	// N is the number of examples.
	N      int
	arrays map[string]*folderArray
	// peak is the most bytes one read held (the batch and one decoded
	// file), read the number of files decoded.
	peak, read atomic.Int64
}

// folderArray is one subfolder of a Folder.
type folderArray struct {
	name   string
	dir    string
	stored []int             // one example's shape in its file
	shape  []int             // one example's shape as read
	typ    importer.DataType // element type as read (before Binding's conversions)
	move   bool              // H×W×C stored, C×H×W read
	label  bool              // nyuv2 label: whole numbers read as int64
	bytes  int64             // one file decoded
}

// Names lists the folder's arrays, sorted.
func (f *Folder) Names() []string {
	out := make([]string, 0, len(f.arrays))
	for n := range f.arrays {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Header returns array name as a Dataset holds it before its values are
// read: its element type and shape [N, …] without values (nil when the
// folder has no such array).
func (f *Folder) Header(name string) *importer.Tensor {
	a := f.arrays[name]
	if a == nil {
		return nil
	}
	return &importer.Tensor{Name: name, Type: a.typ, Shape: append([]int{f.N}, a.shape...)}
}

// PeakBytes is the most memory one batch read from f held at once: the
// batch's values and the file being decoded.
func (f *Folder) PeakBytes() int64 { return f.peak.Load() }

// FilesRead is the number of example files decoded from f so far.
func (f *Folder) FilesRead() int64 { return f.read.Load() }

// exampleIndex returns the example a file name N.npy numbers.
func exampleIndex(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".npy")
	if !ok || base == "" || (len(base) > 1 && base[0] == '0') {
		return 0, false
	}
	for _, c := range base {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(base)
	return i, err == nil
}

// OpenFolder lists the per-example files of the folder source s and
// reads every file's header (not its values), checking before any work
// what a batch will need: each array a subfolder of files named 0.npy,
// 1.npy, … numbered without gaps, every array with as many examples,
// every file of an array of one shape and element type. Errors name the
// file and what was expected.
//
// For KindNYUv2 the folder must hold the subfolders image, label, depth
// and normal (others are ignored) as MTAN's preprocessing writes them,
// channels last: image H×W×3, label H×W or H×W×1 (class ids, −1 for
// pixels without one), depth H×W×1 or H×W, normal H×W×3, floating point
// (labels may be integers). They
// are read as MTAN's loader reads them: image, depth and normal as
// float32 channels first (3×H×W, 1×H×W, 3×H×W), label as int64 H×W
// (whole numbers; −1 kept, for a ce or nll task with ignore_index -1).
//
// For KindFolder every subfolder is an array of that name. An example of
// rank 3 is taken for an image stored channels last (H×W×C) and read
// channels first (C×H×W), as np.moveaxis(x, -1, 0) gives; examples of
// other ranks are read as stored. Element types are kept: floating
// arrays as float32 or float64, integer and bool arrays as int64 (the
// binding converts them as it does arrays of any source).
func OpenFolder(s Source) (*Folder, error) {
	f, err := openFolder(s)
	if err != nil {
		return nil, fmt.Errorf("finetune: data %q: %w", s.Spec, err)
	}
	return f, nil
}

func openFolder(s Source) (*Folder, error) {
	st, err := os.Stat(s.Path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory; %s:DIR wants a folder of subfolders (one per array) holding 0.npy, 1.npy, … one file per example", s.Path, s.Kind)
	}
	entries, err := os.ReadDir(s.Path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if s.Kind == KindNYUv2 {
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		var missing []string
		for _, n := range nyuv2Arrays {
			if !have[n] {
				missing = append(missing, n+"/")
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s has no subfolder %s: an NYUv2 split holds image/, label/, depth/ and normal/ (one .npy file per example in each, as MTAN's preprocessing writes them)",
				s.Path, strings.Join(missing, ", "))
		}
		names = nyuv2Arrays
	} else if len(names) == 0 {
		return nil, fmt.Errorf("%s has no subfolders: want one subfolder per array holding 0.npy, 1.npy, … one file per example", s.Path)
	}
	f := &Folder{Spec: s.Spec, Dir: s.Path, Kind: s.Kind, arrays: map[string]*folderArray{}}
	counts := map[string]int{}
	first := ""
	for _, name := range names {
		a := &folderArray{name: name, dir: filepath.Join(s.Path, name)}
		n, err := countExamples(a.dir)
		if err != nil {
			return nil, err
		}
		counts[name] = n
		if first == "" {
			first, f.N = name, n
		} else if n != f.N {
			lo, hi := name, first // fewer, more examples
			if n > f.N {
				lo, hi = first, name
			}
			return nil, fmt.Errorf("%s is missing: %s/ holds %d examples (0.npy..%d.npy) but %s/ holds %d; every array needs one file per example",
				filepath.Join(s.Path, lo, fmt.Sprintf("%d.npy", counts[lo])), hi, counts[hi], counts[hi]-1, lo, counts[lo])
		}
		if err := a.readHeaders(n); err != nil {
			return nil, err
		}
		f.arrays[name] = a
	}
	if f.N == 0 {
		return nil, fmt.Errorf("%s: no examples: the subfolders hold no N.npy files", s.Path)
	}
	if s.Kind == KindNYUv2 {
		if err := f.nyuv2(); err != nil {
			return nil, err
		}
	} else {
		for _, a := range f.arrays {
			a.shape = a.stored
			if len(a.stored) == 3 {
				a.move = true
				a.shape = []int{a.stored[2], a.stored[0], a.stored[1]}
			}
		}
	}
	return f, nil
}

// countExamples checks that dir holds files 0.npy … N−1.npy and nothing
// else (but hidden files) and returns N.
func countExamples(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	seen := map[int]bool{}
	top := -1
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		i, ok := exampleIndex(name)
		if !ok || e.IsDir() {
			return 0, fmt.Errorf("%s: want only files named 0.npy, 1.npy, … (one per example, numbered from 0 without leading zeros) in %s", filepath.Join(dir, name), dir)
		}
		seen[i] = true
		top = max(top, i)
	}
	for i := 0; i <= top; i++ {
		if !seen[i] {
			return 0, fmt.Errorf("%s is missing: %s holds files up to %d.npy, and examples are numbered 0, 1, … without gaps", filepath.Join(dir, fmt.Sprintf("%d.npy", i)), dir, top)
		}
	}
	return top + 1, nil
}

// readHeaders reads the header of every file of a and checks that they
// agree with 0.npy's.
func (a *folderArray) readHeaders(n int) error {
	var h0 npz.Header
	for i := range n {
		path := a.file(i)
		h, err := npz.ReadHeader(path)
		if err != nil {
			return err
		}
		if i == 0 {
			h0 = h
			a.stored, a.typ = h.Shape, h.Type
			switch {
			case h.Type == importer.Float32 || h.Type == importer.Float64:
			case isInteger(h.Type):
				a.typ = importer.Int64
			default:
				return fmt.Errorf("%s: element type %s: want a floating-point, integer or bool array", path, h.Descr)
			}
			a.bytes = int64(h.Len()) * 8
			if h.Type == importer.Float32 {
				a.bytes = int64(h.Len()) * 4
			}
			continue
		}
		if !slices.Equal(h.Shape, h0.Shape) || h.Type != h0.Type {
			return fmt.Errorf("%s: shape %v of %s, but %s has shape %v of %s: every example of %s/ needs one shape and element type",
				path, h.Shape, h.Descr, a.file(0), h0.Shape, h0.Descr, a.name)
		}
	}
	return nil
}

// isInteger reports whether t is an element type the .npy reader holds as
// int64 (integers and bool).
func isInteger(t importer.DataType) bool {
	switch t {
	case importer.Float32, importer.Float64, importer.Float16:
		return false
	}
	return true
}

// file is the path of example i's file.
func (a *folderArray) file(i int) string {
	return filepath.Join(a.dir, strconv.Itoa(i)+".npy")
}

// nyuv2 checks an NYUv2 split's shapes and sets MTAN's conversions.
func (f *Folder) nyuv2() error {
	img := f.arrays["image"]
	if len(img.stored) != 3 || img.stored[2] != 3 {
		return fmt.Errorf("%s: shape %v: an NYUv2 image is H×W×3 (channels last)", img.file(0), img.stored)
	}
	H, W := img.stored[0], img.stored[1]
	want := map[string]string{"image": "H×W×3", "label": "H×W or H×W×1", "depth": "H×W×1 or H×W", "normal": "H×W×3"}
	for _, name := range nyuv2Arrays {
		a := f.arrays[name]
		s := a.stored
		ok := len(s) >= 2 && s[0] == H && s[1] == W
		switch name {
		case "image", "normal":
			ok = ok && len(s) == 3 && s[2] == 3
		case "label", "depth":
			ok = ok && (len(s) == 2 || len(s) == 3 && s[2] == 1)
		}
		if !ok {
			return fmt.Errorf("%s: shape %v: an NYUv2 %s is %s with the image's H×W (%d×%d, %s)", a.file(0), s, name, want[name], H, W, img.file(0))
		}
		if name != "label" && a.typ == importer.Int64 {
			return fmt.Errorf("%s: integer values: an NYUv2 %s is floating point", a.file(0), name)
		}
		switch name {
		case "label":
			a.label, a.typ, a.shape = true, importer.Int64, []int{H, W}
		default:
			a.typ = importer.Float32
			a.move = len(s) == 3
			a.shape = []int{1, H, W}
			if len(s) == 3 {
				a.shape[0] = s[2]
			}
		}
	}
	return nil
}

// readExample decodes example i of a into dst at offset off (the row of
// a batch, of a.shape), converted to dst's storage: channels moved first
// when a.move, floating values checked to be whole for an integer dst.
// Nothing but the decoded file is held beside dst.
func (a *folderArray) readExample(i int, dst *importer.Tensor, off int) error {
	path := a.file(i)
	t, err := npz.DecodeNPY(path)
	if err != nil {
		return err
	}
	if !slices.Equal(t.Shape, a.stored) {
		return fmt.Errorf("%s: shape %v, but it had shape %v when the data were checked", path, t.Shape, a.stored)
	}
	// at is the index in dst of the file's k-th value.
	at := func(k int) int { return off + k }
	if a.move {
		hw, C := a.stored[0]*a.stored[1], a.stored[2]
		at = func(k int) int { return off + (k%C)*hw + k/C }
	}
	switch {
	case dst.F32 != nil && t.F32 != nil:
		for k, x := range t.F32 {
			dst.F32[at(k)] = x
		}
	case dst.F32 != nil && t.F64 != nil:
		for k, x := range t.F64 {
			dst.F32[at(k)] = float32(x)
		}
	case dst.F64 != nil && t.F64 != nil:
		for k, x := range t.F64 {
			dst.F64[at(k)] = x
		}
	case dst.F64 != nil && t.F32 != nil:
		for k, x := range t.F32 {
			dst.F64[at(k)] = float64(x)
		}
	case dst.F32 != nil || dst.F64 != nil:
		return fmt.Errorf("%s: integer values for a floating-point array", path)
	case t.I64 != nil:
		for k, x := range t.I64 {
			dst.I64[at(k)] = x
		}
	default: // floating values for an integer array: class ids stored as floats
		what := "whole numbers"
		if a.label {
			what = "class ids"
		}
		put := func(k int, x float64) error {
			if x != math.Trunc(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: value %v at index %d is not a whole number; %s holds %s", path, x, k, a.name, what)
			}
			dst.I64[at(k)] = int64(x)
			return nil
		}
		for k, x := range t.F32 {
			if err := put(k, float64(x)); err != nil {
				return err
			}
		}
		for k, x := range t.F64 {
			if err := put(k, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileView is the backing of a Dataset bound to a Folder: which array
// each key reads, and how many examples (a prefix of the folder's).
type fileView struct {
	folder *Folder
	n      int
	arrays map[string]*folderArray // by Dataset key
}

// take reads the examples idx of every key of d into a batch.
func (v *fileView) take(d *Dataset, idx []int) (Batch, error) {
	b := Batch{}
	var held, scratch int64
	for _, key := range d.Names() {
		h := d.Arrays[key]
		a := v.arrays[key]
		row := 1
		for _, s := range a.shape {
			row *= s
		}
		out := &importer.Tensor{Name: h.Name, Type: h.Type, Shape: append([]int{len(idx)}, a.shape...)}
		switch {
		case h.Type == importer.Float32 || h.Type == importer.Float16:
			out.F32 = make([]float32, len(idx)*row)
			held += 4 * int64(len(out.F32))
		case h.Type == importer.Float64:
			out.F64 = make([]float64, len(idx)*row)
			held += 8 * int64(len(out.F64))
		default:
			out.I64 = make([]int64, len(idx)*row)
			held += 8 * int64(len(out.I64))
		}
		for k, i := range idx {
			if i < 0 || i >= v.n {
				return nil, fmt.Errorf("finetune: example %d of a data set of %d", i, v.n)
			}
			if err := a.readExample(i, out, k*row); err != nil {
				return nil, fmt.Errorf("finetune: data %q: %w", v.folder.Spec, err)
			}
			v.folder.read.Add(1)
		}
		scratch = max(scratch, a.bytes)
		b[key] = out
	}
	peak := held + scratch
	for {
		p := v.folder.peak.Load()
		if peak <= p || v.folder.peak.CompareAndSwap(p, peak) {
			break
		}
	}
	return b, nil
}

// bytes is what reading a batch holds beside the batch: one file
// decoded at a time, the largest of the arrays'.
func (v *fileView) bytes() int64 {
	var n int64
	for _, a := range v.arrays {
		n = max(n, a.bytes)
	}
	return n
}

// BindFolder is Bind for a Folder: it checks that every array uses name
// is one of the folder's subfolders and returns a Dataset keyed by
// Use.Key whose Arrays hold headers (element type and shape, no values)
// and whose batches read the examples' files (Take). The first limit
// examples are kept when limit > 0. file names the data in errors.
func BindFolder(f *Folder, uses []Use, limit int, file string) (*Dataset, error) {
	headers := map[string]*importer.Tensor{}
	for _, name := range f.Names() {
		headers[name] = f.Header(name)
	}
	ds, err := bind(headers, uses, limit, file, true)
	if err != nil {
		return nil, err
	}
	v := &fileView{folder: f, n: ds.Len(), arrays: map[string]*folderArray{}}
	for _, u := range uses {
		v.arrays[u.Key] = f.arrays[u.Array]
	}
	ds.files = v
	return ds, nil
}

// FolderSource returns the folder source among specs (ParseSource), if
// any. A folder is read alone: merged with other sources it is an error.
func FolderSource(specs []string) (Source, bool, error) {
	for _, spec := range specs {
		s, err := ParseSource(spec)
		if err != nil {
			return Source{}, false, err
		}
		if s.Kind == "" {
			continue
		}
		if len(specs) > 1 {
			return Source{}, false, fmt.Errorf("finetune: data %q is a folder read a batch at a time; it cannot be merged with other data sources (%s): give it alone", s.Spec, strings.Join(specs, ", "))
		}
		return s, true, nil
	}
	return Source{}, false, nil
}

// errFolder is returned by Load for a folder source, which is read by
// OpenFolder instead.
var errFolder = errors.New("a folder is read a batch at a time, not loaded whole")
