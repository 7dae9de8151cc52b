package importer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/atomicfile"
)

// SaveOptions controls Save. The zero value saves in the input's layout and
// refuses to overwrite any existing file.
type SaveOptions struct {
	// Producer entries are written to the model's metadata_props, replacing
	// entries of the same key (e.g. "paretonav" → a JSON record of the tool
	// version, criterion, tasks and steps). Nil adds nothing.
	Producer map[string]string
	// InlineData stores every initializer inside the model file, even those
	// the input kept in external data. A model that would then exceed the
	// protobuf limit (2 GiB) is refused.
	InlineData bool
	// Force allows overwriting an existing output (the input model
	// included) and its data file.
	Force bool
}

// maxProtoSize is the largest model file Save writes inline: protobuf
// messages are limited to 2 GiB. A variable so that tests can lower it.
var maxProtoSize = 1<<31 - 1

// externalAlign is the alignment of each tensor in a data file written by
// Save, so that readers may map tensors page by page.
const externalAlign = 4096

// externalThreshold is the smallest initializer (in bytes) Save moves to
// external data when a model exceeds maxProtoSize.
const externalThreshold = 1024

// DataFileName returns the name of the external data file Save writes
// beside the model file path: path's base name followed by ".data".
func DataFileName(path string) string { return filepath.Base(path) + ".data" }

// Save writes m to path with the initializers named in weights replaced by
// the given values; everything else (graph, node order, names, element
// types, shapes, opsets, metadata, doc strings and fields unknown to our
// schema) is kept as it was. A weight must name an initializer of the main
// graph and have its shape; its values must be held as the initializer's
// element type needs (F32 for float, float16 and bfloat16, which are
// rounded to nearest even; F64 for double; I64 for integers and bool). An
// inline initializer keeps its storage form (raw_data or typed field).
//
// Every initializer released by ReleaseData needs a weight (Save fails
// naming those without one); it is written in the storage form it had.
//
// Initializers that m kept in external data are written to one data file
// beside path, named DataFileName(path), each at an offset aligned to 4096
// bytes, unless opt.InlineData. When the model would otherwise exceed the
// protobuf limit of 2 GiB, Save moves every floating-point initializer of
// 1 KiB or more to that data file automatically (with opt.InlineData it
// fails instead); integer initializers stay inline, since ONNX Runtime
// cannot read shape arguments from external data.
//
// Writes are atomic: each file is written to a temporary file in path's
// folder, synced, and renamed over its target, and the folder is synced;
// on error no partial file is left. Save refuses to overwrite an existing
// file (the input model included) unless opt.Force.
func Save(path string, m *Model, weights map[string]*Tensor, opt SaveOptions) error {
	if err := checkDestination(m, opt.Force, path); err != nil {
		return err
	}
	// Written through a link to the file it names, in that file's folder
	// (with its data file beside it), never over the link itself.
	shown := path
	path, err := atomicfile.Target(path)
	if err != nil {
		return fmt.Errorf("importer: save %s: %w", shown, err)
	}
	src := m.Proto
	if m.written != nil {
		src = m.written // functions and calls as they were written
	}
	out := proto.Clone(src).(*onnxpb.ModelProto)
	g := out.GetGraph()
	if g == nil {
		return fmt.Errorf("importer: save %s: model has no graph", path)
	}
	index := make(map[string]int, len(g.Initializer))
	for i, tp := range g.Initializer {
		index[tp.GetName()] = i
	}
	var errs ErrorList
	names := make([]string, 0, len(weights))
	for name := range weights {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		where := fmt.Sprintf("weight %q", name)
		i, ok := index[name]
		if !ok {
			errs.Add(where, "the model has no initializer of that name")
			continue
		}
		if err := checkWeight(g.Initializer[i], weights[name]); err != nil {
			errs.Add(where, "%v", err)
		}
	}
	for _, name := range m.Released() {
		if weights[name] == nil {
			errs.Add(fmt.Sprintf("initializer %q", name), "its values were released (Model.ReleaseData); Save needs them as a weight")
		}
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("importer: save %s: %w", path, err)
	}

	data := &dataFile{name: DataFileName(path)}
	for i, tp := range g.Initializer {
		w := weights[tp.GetName()]
		dt := DataType(tp.GetDataType())
		external := tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
		raw, released := m.released[tp.GetName()]
		switch {
		case released && raw:
			tp.RawData = rawBytes(w, dt)
		case released:
			setTyped(tp, w, dt)
		case external:
			var raw []byte
			if w != nil {
				raw = rawBytes(w, dt)
			} else {
				var err error
				if raw, err = readExternal(m.Dir, src.Graph.Initializer[i]); err != nil {
					return fmt.Errorf("importer: save %s: initializer %q: %w", path, tp.GetName(), err)
				}
			}
			if opt.InlineData {
				setInline(tp, raw)
			} else {
				data.add(tp, raw)
			}
		case w != nil && tp.RawData != nil:
			tp.RawData = rawBytes(w, dt)
		case w != nil:
			setTyped(tp, w, dt)
		}
	}
	setMetadata(out, opt.Producer)

	if proto.Size(out) > maxProtoSize {
		if opt.InlineData {
			return fmt.Errorf("importer: save %s: the model needs %d bytes, more than protobuf's limit of %d; save without --inline-data to keep weights in an external data file", path, proto.Size(out), maxProtoSize)
		}
		for _, tp := range g.Initializer {
			if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL || storageFor(DataType(tp.GetDataType())) == 'i' {
				continue // integer tensors stay inline: ONNX Runtime reads shapes only from inline data
			}
			if _, n, err := tensorShape(tp); err != nil || n*elemSize[DataType(tp.GetDataType())] < externalThreshold {
				continue
			}
			t, err := DecodeTensor(tp)
			if err != nil {
				return fmt.Errorf("importer: save %s: initializer %q: %w", path, tp.GetName(), err)
			}
			data.add(tp, rawBytes(t, DataType(tp.GetDataType())))
		}
		if size := proto.Size(out); size > maxProtoSize {
			return fmt.Errorf("importer: save %s: the model needs %d bytes even with its weights in external data, more than protobuf's limit of %d", path, size, maxProtoSize)
		}
	}

	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(out)
	if err != nil {
		return fmt.Errorf("importer: save %s: encoding: %w", path, err)
	}
	dir := filepath.Dir(path)
	dataPath := filepath.Join(dir, data.name)
	var tmpData string
	if data.used {
		if err := checkDestination(m, opt.Force, dataPath); err != nil {
			return err
		}
		if dataPath, err = atomicfile.Target(dataPath); err != nil {
			return fmt.Errorf("importer: save %s: its data file: %w", shown, err)
		}
		if tmpData, err = writeTemp(dataPath, data.buf); err != nil {
			return err
		}
	}
	tmpModel, err := writeTemp(path, b)
	if err != nil {
		if tmpData != "" {
			os.Remove(tmpData)
		}
		return err
	}
	if tmpData != "" {
		if err := os.Rename(tmpData, dataPath); err != nil {
			os.Remove(tmpData)
			os.Remove(tmpModel)
			return fmt.Errorf("importer: save %s: %w", path, err)
		}
	}
	if err := os.Rename(tmpModel, path); err != nil {
		os.Remove(tmpModel)
		return fmt.Errorf("importer: save %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("importer: save %s: %w", path, err)
	}
	return nil
}

// checkDestination refuses directories, the model's own files (the file
// it was read from and its external data files, whatever force says:
// saving over them would lose the input), and other existing files
// unless force.
func checkDestination(m *Model, force bool, targets ...string) error {
	for _, p := range targets {
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("importer: save %s: %w", p, err)
		}
		if st.IsDir() {
			return fmt.Errorf("importer: save %s: is a directory; expected a file name", p)
		}
		if what := m.ownFile(st); what != "" {
			return fmt.Errorf("importer: save %s: is %s; paretonav never overwrites an input (choose another path)", p, what)
		}
		if !force {
			return fmt.Errorf("importer: save %s: file exists; refusing to overwrite it (use --force)", p)
		}
	}
	return nil
}

// ownFile says which of m's own files st is ("the input model", "the
// input model's external data file NAME"), or "" when it is none.
func (m *Model) ownFile(st os.FileInfo) string {
	if m.Path != "" {
		if in, err := os.Stat(m.Path); err == nil && os.SameFile(in, st) {
			return "the input model"
		}
	}
	if m.Proto == nil {
		return ""
	}
	for _, d := range m.DataFiles() {
		if in, err := os.Stat(d); err == nil && os.SameFile(in, st) {
			return "the input model's external data file " + filepath.Base(d)
		}
	}
	return ""
}

// checkWeight checks a new value against the initializer it replaces.
func checkWeight(tp *onnxpb.TensorProto, w *Tensor) error {
	if w == nil {
		return fmt.Errorf("nil tensor")
	}
	dt := DataType(tp.GetDataType())
	if _, ok := elemSize[dt]; !ok {
		return fmt.Errorf("initializer has unsupported element type %v", dt)
	}
	if w.Type != dt && !(w.Type == Float32 && storageFor(dt) == 'f') {
		return fmt.Errorf("element type %v, the initializer holds %v", w.Type, dt)
	}
	want := make([]int, len(tp.Dims))
	for i, d := range tp.Dims {
		want[i] = int(d)
	}
	if !slices.Equal(w.Shape, want) {
		return fmt.Errorf("shape %v, the initializer has shape %v", w.Shape, want)
	}
	return checkStorage(w, dt)
}

// setInline moves an external tensor's data into raw_data.
func setInline(tp *onnxpb.TensorProto, raw []byte) {
	tp.DataLocation = nil
	tp.ExternalData = nil
	tp.RawData = raw
	if tp.RawData == nil {
		tp.RawData = []byte{}
	}
}

// setMetadata sets metadata_props entries, replacing those with equal keys.
func setMetadata(mp *onnxpb.ModelProto, kv map[string]string) {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kv[k]
		found := false
		for _, e := range mp.MetadataProps {
			if e.GetKey() == k {
				e.Value = proto.String(v)
				found = true
			}
		}
		if !found {
			mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String(k), Value: proto.String(v)})
		}
	}
}

// dataFile accumulates the external data file Save writes.
type dataFile struct {
	name string
	buf  []byte
	used bool
}

// add appends raw at the next aligned offset and points tp at it.
func (d *dataFile) add(tp *onnxpb.TensorProto, raw []byte) {
	d.used = true
	if pad := len(d.buf) % externalAlign; pad != 0 {
		d.buf = append(d.buf, make([]byte, externalAlign-pad)...)
	}
	off := len(d.buf)
	d.buf = append(d.buf, raw...)
	tp.RawData, tp.FloatData, tp.DoubleData, tp.Int32Data, tp.Int64Data, tp.Uint64Data = nil, nil, nil, nil, nil, nil
	tp.DataLocation = onnxpb.TensorProto_EXTERNAL.Enum()
	tp.ExternalData = []*onnxpb.StringStringEntryProto{
		{Key: proto.String("location"), Value: proto.String(d.name)},
		{Key: proto.String("offset"), Value: proto.String(strconv.Itoa(off))},
		{Key: proto.String("length"), Value: proto.String(strconv.Itoa(len(raw)))},
	}
}

// writeTemp writes b to a new temporary file beside target
// (atomicfile.Temp, mode 0644), synced and closed, and returns its name;
// Save renames it over target.
func writeTemp(target string, b []byte) (string, error) {
	name, err := atomicfile.Temp(target, 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("importer: cannot write %s: %w", target, err)
	}
	return name, nil
}
