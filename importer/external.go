package importer

import (
	"fmt"
	"github.com/paretonav/paretonav/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// externalRef is a parsed external_data entry of a TensorProto.
type externalRef struct {
	location  string
	offset    int64
	length    int64
	hasLength bool
}

func parseExternal(tp *onnxpb.TensorProto) (externalRef, error) {
	var r externalRef
	for _, kv := range tp.ExternalData {
		switch kv.GetKey() {
		case "location":
			r.location = kv.GetValue()
		case "offset", "length":
			v, err := strconv.ParseInt(kv.GetValue(), 10, 64)
			if err != nil || v < 0 {
				return r, fmt.Errorf("external data %s %q is not a non-negative integer", kv.GetKey(), kv.GetValue())
			}
			if kv.GetKey() == "offset" {
				r.offset = v
			} else {
				r.length, r.hasLength = v, true
			}
		}
	}
	if r.location == "" {
		return r, fmt.Errorf("external data has no location")
	}
	return r, nil
}

// resolveExternal returns the file that location names inside dir, refusing
// anything that could leave dir: absolute paths, ".." components and
// symbolic links that resolve outside it.
func resolveExternal(dir, location string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("external data %q: the model was not loaded from a folder", location)
	}
	if filepath.IsAbs(location) || strings.HasPrefix(location, "/") || strings.HasPrefix(location, `\`) || filepath.VolumeName(location) != "" {
		return "", fmt.Errorf("external data location %q is absolute; expected a path relative to the model's folder", location)
	}
	for _, part := range strings.FieldsFunc(location, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("external data location %q contains \"..\"; expected a path inside the model's folder", location)
		}
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("external data %q: model folder: %w", location, err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("external data %q: model folder: %w", location, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(location)))
	if err != nil {
		return "", fmt.Errorf("external data %q: %w", location, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", fmt.Errorf("external data %q: %w", location, err)
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("external data location %q resolves to %s, outside the model's folder %s", location, real, root)
	}
	return real, nil
}

// externalSpan checks tp's external data reference against the file it
// names and returns the open file, offset and byte count to read. The
// caller closes the file.
func externalSpan(dir string, tp *onnxpb.TensorProto) (*os.File, int64, int64, error) {
	_, n, err := tensorShape(tp)
	if err != nil {
		return nil, 0, 0, err
	}
	dt := DataType(tp.GetDataType())
	size, ok := elemSize[dt]
	if !ok {
		return nil, 0, 0, fmt.Errorf("unsupported element type %v", dt)
	}
	need := int64(n) * int64(size)
	ref, err := parseExternal(tp)
	if err != nil {
		return nil, 0, 0, err
	}
	path, err := resolveExternal(dir, ref.location)
	if err != nil {
		return nil, 0, 0, err
	}
	// Stat before opening: opening a FIFO waits for a writer.
	if st, err := os.Stat(path); err != nil {
		return nil, 0, 0, fmt.Errorf("external data: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, 0, 0, fmt.Errorf("external data %q is not a regular file (a %s)", ref.location, atomicfile.Kind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("external data: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, 0, fmt.Errorf("external data: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, 0, fmt.Errorf("external data %q is not a regular file (a %s)", ref.location, atomicfile.Kind(st.Mode()))
	}
	fsize := st.Size()
	if ref.offset > fsize {
		f.Close()
		return nil, 0, 0, fmt.Errorf("external data %q: offset %d is beyond the file's %d bytes", ref.location, ref.offset, fsize)
	}
	length := fsize - ref.offset
	if ref.hasLength {
		if ref.length > fsize-ref.offset {
			f.Close()
			return nil, 0, 0, fmt.Errorf("external data %q: offset %d + length %d is beyond the file's %d bytes", ref.location, ref.offset, ref.length, fsize)
		}
		length = ref.length
	}
	if length != need {
		f.Close()
		return nil, 0, 0, fmt.Errorf("external data %q: %d bytes at offset %d, shape %v of %v needs %d", ref.location, length, ref.offset, tp.Dims, dt, need)
	}
	return f, ref.offset, length, nil
}

// readExternal reads the bytes of an external tensor from dir.
func readExternal(dir string, tp *onnxpb.TensorProto) ([]byte, error) {
	f, off, length, err := externalSpan(dir, tp)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, off); err != nil && !(err == io.EOF && length == 0) {
		return nil, fmt.Errorf("external data: %w", err)
	}
	return buf, nil
}

// externalSizes sums the external data of a model's initializers.
type externalSizes struct {
	total                int64
	largest, largestFile string
	largestBytes         int64
}

// checkExternal checks every external initializer of m against its file,
// without reading the data, and sums their bytes.
func (m *Model) checkExternal() (externalSizes, error) {
	var errs ErrorList
	var sz externalSizes
	for _, tp := range m.Proto.GetGraph().GetInitializer() {
		if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			continue
		}
		f, _, n, err := externalSpan(m.Dir, tp)
		if err != nil {
			errs.Add(fmt.Sprintf("initializer %q", tp.GetName()), "%v", err)
			continue
		}
		f.Close()
		sz.total += n
		if n > sz.largestBytes {
			ref, _ := parseExternal(tp)
			sz.largest, sz.largestFile, sz.largestBytes = tp.GetName(), ref.location, n
		}
	}
	return sz, errs.Err()
}

// DataFiles returns the external data files m's initializers read, each
// once, resolved to absolute paths, in the order the initializers name
// them: inputs of any job that reads m, which nothing it writes may
// replace. References that do not resolve are left out (loading m
// reports them).
func (m *Model) DataFiles() []string {
	var out []string
	seen := map[string]bool{}
	for _, tp := range m.Proto.GetGraph().GetInitializer() {
		if tp.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			continue
		}
		ref, err := parseExternal(tp)
		if err != nil {
			continue
		}
		p, err := resolveExternal(m.Dir, ref.location)
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}
