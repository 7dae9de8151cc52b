package finetune

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/format/idx"
	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

// Source is one parsed data source spec. ParseSource describes the forms.
type Source struct {
	// Spec is the spec as given (trimmed of surrounding spaces).
	Spec string
	// Name is the array name for a single-array source, "" for an NPZ
	// archive (whose arrays keep their own names).
	Name string
	// Path is the file.
	Path string
	// Raw keeps IDX pixel values at 0..255 instead of scaling them to
	// [0,1].
	Raw bool
	// Kind is "" for a file, KindFolder or KindNYUv2 for a folder of
	// per-example files (Path is the folder; OpenFolder reads it).
	Kind string
}

// rawSuffix marks an IDX image source whose pixels are not scaled.
const rawSuffix = ":raw"

// ParseSource parses one data source spec:
//
//	FILE            an NPZ archive: every array in it, under its own name
//	NAME=FILE       one array named NAME: FILE is a .npy file or an IDX
//	                file (MNIST's format, raw or gzip)
//	NAME=FILE:raw   the same, for IDX images: pixel values kept at 0..255
//	folder:DIR      a folder of arrays kept one .npy file per example:
//	                DIR/NAME/0.npy, DIR/NAME/1.npy, … (OpenFolder)
//	nyuv2:DIR       an NYUv2 split as MTAN's preprocessing leaves it:
//	                DIR/image, DIR/label, DIR/depth, DIR/normal (OpenFolder)
//
// A spec starting with "folder:" or "nyuv2:" is a folder (give a file of
// such a name as ./folder:…). Otherwise the text before the first "=" is
// NAME, so a FILE given alone cannot hold "=". What FILE holds is told by
// its first bytes when it is loaded, not by its extension.
func ParseSource(spec string) (Source, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Source{}, errors.New("finetune: empty data source: want FILE.npz, NAME=FILE.npy, NAME=FILE.idx, folder:DIR or nyuv2:DIR")
	}
	s := Source{Spec: spec, Path: spec}
	for _, k := range []struct{ prefix, kind string }{{folderPrefix, KindFolder}, {nyuv2Prefix, KindNYUv2}} {
		if dir, ok := strings.CutPrefix(spec, k.prefix); ok {
			if dir = strings.TrimSpace(dir); dir == "" {
				return Source{}, fmt.Errorf("finetune: data %q: no folder after %q: want %sDIR", spec, k.prefix, k.prefix)
			}
			s.Path, s.Kind = dir, k.kind
			return s, nil
		}
	}
	name, file, named := strings.Cut(spec, "=")
	if !named {
		return s, nil
	}
	s.Name, s.Path = strings.TrimSpace(name), strings.TrimSpace(file)
	if s.Name == "" {
		return Source{}, fmt.Errorf("finetune: data %q: empty array name before \"=\": want NAME=FILE", spec)
	}
	if p, ok := strings.CutSuffix(s.Path, rawSuffix); ok {
		s.Path, s.Raw = p, true
	}
	if s.Path == "" {
		return Source{}, fmt.Errorf("finetune: data %q: no file after \"=\": want NAME=FILE", spec)
	}
	return s, nil
}

// WithPath returns the spec of s with its file (or folder) at path: its
// kind, name and :raw kept.
func (s Source) WithPath(path string) string {
	switch {
	case s.Kind != "":
		return s.Kind + ":" + path
	case s.Name == "":
		return path
	case s.Raw:
		return s.Name + "=" + path + rawSuffix
	}
	return s.Name + "=" + path
}

// fileKind is what a data file holds, told by its first bytes.
type fileKind int

const (
	kindNPZ fileKind = iota + 1 // a zip archive
	kindNPY                     // "\x93NUMPY"
	kindIDX                     // 00 00 <type> <ndim>, or gzip
)

func (k fileKind) String() string {
	switch k {
	case kindNPZ:
		return "an NPZ archive"
	case kindNPY:
		return "a .npy array"
	case kindIDX:
		return "an IDX file"
	}
	return "unknown"
}

// sniff tells what the file at path holds from its first bytes.
func sniff(path string) (fileKind, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head, err := bufio.NewReader(f).Peek(6)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("\x93NUMPY")):
		return kindNPY, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return kindNPZ, nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}), bytes.HasPrefix(head, []byte{0, 0}):
		return kindIDX, nil
	}
	return 0, fmt.Errorf("%s: first bytes % x: want an NPZ archive (zip), a .npy array (\\x93NUMPY) or an IDX file (00 00 08 <ndim>, or gzip)", path, head)
}

// Load reads the arrays of s: every array of an NPZ archive, or the one
// array of a .npy or IDX file, named s.Name. An IDX file of three
// dimensions holds images [N,H,W]: they become float32 [N,1,H,W] scaled
// to [0,1] (pixel/255), or kept at 0..255 with s.Raw. An IDX file of one
// dimension holds labels: they become int64 [N]. Errors name s.Spec.
func (s Source) Load() (map[string]*importer.Tensor, error) {
	return s.LoadWithin(LoadOptions{})
}

// LoadOptions select the arrays a load decodes and bound their memory.
type LoadOptions struct {
	// Want, when set, says which arrays to read; the others are skipped
	// without being decoded (an NPZ member's data is never read).
	Want func(name string) bool
	// MaxBytes, when positive, bounds the memory of the arrays read (each
	// source on its own; LoadArraysWithin, all together): an array that
	// would pass it is refused from its header, before it is allocated.
	MaxBytes int64
	// From says where MaxBytes comes from, for errors.
	From string
	// Used is what arrays read before this load take of MaxBytes
	// (LoadArraysWithin sets it for each source after the first).
	Used int64
}

// LoadWithin is Load with options.
func (s Source) LoadWithin(opt LoadOptions) (map[string]*importer.Tensor, error) {
	arrays, err := s.load(opt)
	if err != nil {
		return nil, fmt.Errorf("finetune: data %q: %w", s.Spec, err)
	}
	return arrays, nil
}

func (s Source) load(opt LoadOptions) (map[string]*importer.Tensor, error) {
	if s.Kind != "" {
		return nil, errFolder
	}
	if st, err := os.Stat(s.Path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; want an NPZ archive, a .npy array or an IDX file", s.Path)
	}
	kind, err := sniff(s.Path)
	if err != nil {
		return nil, err
	}
	if s.Name == "" {
		if kind != kindNPZ {
			return nil, fmt.Errorf("%s is %v, one unnamed array: give it as NAME=%s", s.Path, kind, s.Path)
		}
		return npz.ReadSelect(s.Path, npz.ReadOptions{Want: opt.Want, MaxBytes: opt.MaxBytes, From: opt.From, Used: opt.Used})
	}
	if opt.Want != nil && !opt.Want(s.Name) {
		return map[string]*importer.Tensor{}, nil
	}
	if s.Raw && kind != kindIDX {
		return nil, fmt.Errorf("%s is %v: %s applies to IDX images only", s.Path, kind, rawSuffix)
	}
	var t *importer.Tensor
	switch kind {
	case kindNPZ:
		return nil, fmt.Errorf("%s is an NPZ archive, whose arrays have their own names: give it as %s, without NAME=", s.Path, s.Path)
	case kindNPY:
		limit := opt.MaxBytes
		if limit > 0 {
			limit = max(limit-opt.Used, 1)
		}
		if t, err = npz.ReadNPYWithin(s.Path, limit, opt.From); err != nil {
			// The array is s.Name, not the file's base name, and the
			// bound the whole of opt.MaxBytes, arrays read before in it.
			if se := (*npz.SizeError)(nil); errors.As(err, &se) && opt.MaxBytes > 0 {
				e := *se
				e.Array, e.Before, e.Max = s.Name, opt.Used, opt.MaxBytes
				return nil, fmt.Errorf("%s: %w", s.Path, &e)
			}
			return nil, err
		}
	default:
		if t, err = s.readIDX(opt); err != nil {
			return nil, err
		}
	}
	t.Name = s.Name
	return map[string]*importer.Tensor{s.Name: t}, nil
}

// readIDX converts an IDX file of images or labels to a tensor. Its
// header, read first (through gzip for a compressed file), gives the
// shape: a tensor that would pass opt.MaxBytes is refused with a
// *npz.SizeError naming s.Name before the body is read, and the body is
// converted as it is read, never held as bytes beside the tensor.
func (s Source) readIDX(opt LoadOptions) (*importer.Tensor, error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := idx.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path, err)
	}
	defer rd.Close()
	dims, n := rd.Dims, rd.Len()
	var shape []int
	var dtype string
	var size int64
	switch len(dims) {
	case 1:
		if s.Raw {
			return nil, fmt.Errorf("%s holds labels %v: %s applies to IDX images only", s.Path, dims, rawSuffix)
		}
		shape, dtype, size = dims, "int64", 8*int64(n)
	case 3:
		shape, dtype, size = []int{dims[0], 1, dims[1], dims[2]}, "float32", 4*int64(n)
	default:
		return nil, fmt.Errorf("%s: IDX dimensions %v: want 1 (labels [N]) or 3 (images [N,H,W])", s.Path, dims)
	}
	if opt.MaxBytes > 0 && size > opt.MaxBytes-opt.Used {
		return nil, fmt.Errorf("%s: %w", s.Path, &npz.SizeError{Array: s.Name, Shape: shape, Dtype: dtype, Bytes: size, Before: opt.Used, Max: opt.MaxBytes, From: opt.From})
	}
	var lab []int64
	var px []float32
	if dtype == "int64" {
		lab = make([]int64, n)
	} else {
		px = make([]float32, n)
	}
	buf := make([]byte, min(n, 1<<16))
	for got := 0; got < n; {
		k, err := io.ReadFull(rd, buf[:min(len(buf), n-got)])
		for i, v := range buf[:k] {
			if lab != nil {
				lab[got+i] = int64(v)
			} else if s.Raw {
				px[got+i] = float32(v)
			} else {
				px[got+i] = float32(v) / 255 // as models/datasets builds x
			}
		}
		got += k
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Path, rd.Short(got))
		}
	}
	if lab != nil {
		return importer.NewInt64(s.Name, shape, lab), nil
	}
	return importer.NewFloat32(s.Name, shape, px), nil
}

// LoadArrays reads and merges the arrays of every data source spec (see
// ParseSource; Source.Load says what each file gives), in any order.
// Arrays keep the names their sources give them; a name given by two
// sources is an error naming both. When several sources are merged, every
// array that is not a scalar must have the same number of examples (first
// dimension); the error names both arrays and their sources. A single NPZ
// archive is returned as read: its arrays are checked when bound (Bind).
func LoadArrays(specs []string) (map[string]*importer.Tensor, error) {
	return LoadArraysWithin(specs, LoadOptions{})
}

// LoadArraysWithin is LoadArrays reading only the arrays opt.Want
// accepts, within opt.MaxBytes for all sources together.
func LoadArraysWithin(specs []string, opt LoadOptions) (map[string]*importer.Tensor, error) {
	if len(specs) == 0 {
		return nil, errors.New("finetune: no data source: want FILE.npz, NAME=FILE.npy, NAME=FILE.idx, folder:DIR or nyuv2:DIR")
	}
	srcs := make([]Source, len(specs))
	for i, spec := range specs {
		s, err := ParseSource(spec)
		if err != nil {
			return nil, err
		}
		srcs[i] = s
	}
	out := map[string]*importer.Tensor{}
	from := map[string]string{} // array → spec
	ref := ""                   // the first non-scalar array, for the example count
	left := opt
	for _, s := range srcs {
		arrays, err := s.LoadWithin(left)
		if err != nil {
			return nil, err
		}
		for _, a := range arrays {
			left.Used += heldBytes(a)
		}
		names := make([]string, 0, len(arrays))
		for n := range arrays {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if prev, dup := from[n]; dup {
				return nil, fmt.Errorf("finetune: array %q comes from two data sources, %q and %q", n, prev, s.Spec)
			}
			a := arrays[n]
			if len(srcs) > 1 && len(a.Shape) > 0 {
				if ref == "" {
					ref = n
				} else if r := out[ref]; r.Shape[0] != a.Shape[0] {
					return nil, fmt.Errorf("finetune: array %q (from %q) has %d examples but array %q (from %q) has %d",
						n, s.Spec, a.Shape[0], ref, from[ref], r.Shape[0])
				}
			}
			out[n], from[n] = a, s.Spec
		}
	}
	return out, nil
}

// ArrayNames lists the arrays the data sources specs hold without
// decoding them (for errors about arrays a selective load skipped).
func ArrayNames(specs []string) ([]string, error) {
	var out []string
	for _, spec := range specs {
		s, err := ParseSource(spec)
		if err != nil {
			return nil, err
		}
		if s.Name != "" {
			out = append(out, s.Name)
			continue
		}
		if s.Kind != "" {
			f, err := OpenFolder(s)
			if err != nil {
				return nil, err
			}
			out = append(out, f.Names()...)
			continue
		}
		names, err := npz.Names(s.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}
