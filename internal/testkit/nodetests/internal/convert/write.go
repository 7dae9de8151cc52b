package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/nodetests"
)

// writeCorpus writes cases into dir (which exists and is empty) in ONNX's
// node-test layout.
func writeCorpus(dir string, cases []*srcCase) error {
	for _, c := range cases {
		set := filepath.Join(dir, c.dir, "test_data_set_0")
		if err := os.MkdirAll(set, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.dir, "model.onnx"), c.modelBytes, 0o644); err != nil {
			return err
		}
		for _, group := range []struct {
			prefix  string
			tensors []*importer.Tensor
		}{{"input", c.inputs}, {"output", c.outputs}} {
			for k, t := range group.tensors {
				tp, err := importer.EncodeTensor(t)
				if err != nil {
					return fmt.Errorf("%s: %s %d: %w", c.file, group.prefix, k, err)
				}
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(tp)
				if err != nil {
					return fmt.Errorf("%s: %s %d: %w", c.file, group.prefix, k, err)
				}
				if err := os.WriteFile(filepath.Join(set, fmt.Sprintf("%s_%d.pb", group.prefix, k)), b, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// verify reads the corpus in dir back with nodetests.LoadDir and checks
// that it holds exactly the parsed cases: names, op types, model bytes and
// every tensor's name, type, shape and value bits.
func verify(dir string, want []*srcCase) error {
	got, err := nodetests.LoadDir(dir)
	if err != nil {
		return fmt.Errorf("reading the written corpus back: %w", err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("read back %d cases, wrote %d", len(got), len(want))
	}
	byName := map[string]*nodetests.Case{}
	for _, c := range got {
		byName[c.Name] = c
	}
	for _, w := range want {
		g, ok := byName[w.name]
		if !ok {
			return fmt.Errorf("%s: case %s (folder %s) not read back under that name", w.file, w.name, w.dir)
		}
		switch {
		case g.Dir != w.dir:
			return fmt.Errorf("%s: read back from folder %s, written to %s", w.file, g.Dir, w.dir)
		case g.OpType != w.opType:
			return fmt.Errorf("%s: op type %s read back, onnx-go says %s", w.file, g.OpType, w.opType)
		case !bytes.Equal(g.ModelBytes, w.modelBytes):
			return fmt.Errorf("%s: model bytes differ when read back", w.file)
		}
		if err := sameTensors(g.Inputs, w.inputs); err != nil {
			return fmt.Errorf("%s: inputs: %w", w.file, err)
		}
		if err := sameTensors(g.ExpectedOutputs, w.outputs); err != nil {
			return fmt.Errorf("%s: outputs: %w", w.file, err)
		}
	}
	return nil
}

// sameTensors checks that got and want agree in name, type, shape and the
// bits of every value (so NaNs compare equal and -0 differs from 0).
func sameTensors(got, want []*importer.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d tensors read back, %d written", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g.Name != w.Name || g.Type != w.Type || !slices.Equal(g.Shape, w.Shape) {
			return fmt.Errorf("tensor %d: read back %q %v %v, written %q %v %v", k, g.Name, g.Type, g.Shape, w.Name, w.Type, w.Shape)
		}
		eq32 := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
		eq64 := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
		if !slices.EqualFunc(g.F32, w.F32, eq32) || !slices.EqualFunc(g.F64, w.F64, eq64) || !slices.Equal(g.I64, w.I64) {
			return fmt.Errorf("tensor %q: values differ when read back", w.Name)
		}
	}
	return nil
}

// replaceDir builds a new version of the folder out with fill, checks it
// with check and only then puts it in out's place, removing the old one.
// On error out is left as it was and nothing new remains.
func replaceDir(out string, fill, check func(dir string) error) (err error) {
	out = filepath.Clean(out)
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := check(tmp); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(out); err == nil {
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		if old != "" {
			os.Rename(old, out)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
