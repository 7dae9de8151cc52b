package importer

import (
	"fmt"
	"sort"

	"github.com/paretonav/paretonav/importer/onnxpb"
)

// ReleaseData drops the values m holds in memory for the named inline
// initializers, keeping their names, types, shapes and storage forms, so
// that a caller that holds the values elsewhere (the backend's parameter
// vector) does not hold them twice: for the full MTAN that is 177 MB.
// Initializers kept in external data hold nothing in memory and are left
// as they are. Afterwards Initializer fails on a released initializer,
// and Save needs a weight for each of them (see Save). Clone copies the
// release. Unknown names are an error naming them; nothing is released
// then.
func (m *Model) ReleaseData(names []string) error {
	byName := map[string]*onnxpb.TensorProto{}
	for _, tp := range m.Proto.GetGraph().GetInitializer() {
		byName[tp.GetName()] = tp
	}
	var errs ErrorList
	for _, name := range names {
		if byName[name] == nil {
			errs.Add(fmt.Sprintf("initializer %q", name), "no such initializer in the main graph")
		}
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("importer: release data: %w", err)
	}
	var written map[string]*onnxpb.TensorProto
	if m.written != nil {
		written = map[string]*onnxpb.TensorProto{}
		for _, tp := range m.written.GetGraph().GetInitializer() {
			written[tp.GetName()] = tp
		}
	}
	if m.released == nil {
		m.released = map[string]bool{}
	}
	for _, name := range names {
		tp := byName[name]
		if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			continue
		}
		if _, done := m.released[name]; !done {
			m.released[name] = tp.RawData != nil
		}
		clearData(tp)
		if w := written[name]; w != nil {
			clearData(w)
		}
	}
	return nil
}

// clearData drops an inline tensor's values.
func clearData(tp *onnxpb.TensorProto) {
	tp.RawData, tp.FloatData, tp.DoubleData, tp.Int32Data, tp.Int64Data, tp.Uint64Data = nil, nil, nil, nil, nil, nil
}

// Released lists the initializers whose values ReleaseData dropped, in
// name order.
func (m *Model) Released() []string {
	out := make([]string, 0, len(m.released))
	for name := range m.released {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// releasedError is Initializer's error for a released initializer.
func releasedError(name string) error {
	return fmt.Errorf("initializer %q: its values were released (Model.ReleaseData); they are held by whoever released them", name)
}

// InlineBytes returns the bytes m holds in memory for the values of the
// named initializers of the main graph: nothing for those in external
// data, those released by ReleaseData, or unknown names.
func (m *Model) InlineBytes(names []string) int64 {
	want := make(map[string]bool, len(names))
	for _, name := range names {
		want[name] = true
	}
	var n int64
	for _, tp := range m.Proto.GetGraph().GetInitializer() {
		if want[tp.GetName()] {
			n += int64(len(tp.RawData)) + 4*int64(len(tp.FloatData)+len(tp.Int32Data)) +
				8*int64(len(tp.DoubleData)+len(tp.Int64Data)+len(tp.Uint64Data))
		}
	}
	return n
}
