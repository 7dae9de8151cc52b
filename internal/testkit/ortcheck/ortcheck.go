// Package ortcheck runs ONNX models in ONNX Runtime, the reference
// implementation, so that tests can compare paretonav's results with it.
//
// ONNX Runtime is reached through its node binding (onnxruntime-node): a
// small JavaScript runner, embedded in this package, is written to a
// temporary folder and run with node. Tensors travel through temporary
// files as raw little-endian values with a small JSON manifest.
//
// The runner uses the CPU execution provider with graph optimisations
// disabled and one intra-op thread: no node fusion (Conv+BN folding, GEMM
// fusion) changes the order of floating-point operations, so results are
// as close as ORT gets to a plain evaluation of the graph and are
// reproducible from run to run.
//
// Where the binding lives: $PARETONAV_ORT_DIR (a node_modules folder
// holding onnxruntime-node), else <repo root>/.tools/ort/node_modules, the
// repo root being the first folder holding go.mod above the working
// directory. node is looked up on PATH, then at /usr/bin/node.
package ortcheck

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

//go:embed runner.js
var runnerJS []byte

// EnvDir names the environment variable that points at the node_modules
// folder holding onnxruntime-node.
const EnvDir = "PARETONAV_ORT_DIR"

// ErrUnavailable is returned (wrapped) by Run when node or
// onnxruntime-node cannot be found.
var ErrUnavailable = errors.New("ortcheck: ONNX Runtime unavailable")

type setup struct {
	node   string // path of the node executable
	ortDir string // node_modules folder holding onnxruntime-node
	reason string // why it is unavailable ("" if available)
}

var (
	setupOnce sync.Once
	found     setup
)

// locate finds node and onnxruntime-node once per process and checks that
// the binding loads.
func locate() setup {
	setupOnce.Do(func() { found = probe() })
	return found
}

func probe() setup {
	node, err := exec.LookPath("node")
	if err != nil {
		if _, err2 := os.Stat("/usr/bin/node"); err2 != nil {
			return setup{reason: "node not found on PATH nor at /usr/bin/node"}
		}
		node = "/usr/bin/node"
	}
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return setup{reason: fmt.Sprintf("%s is not set and the repo root was not found: %v", EnvDir, err)}
		}
		dir = filepath.Join(root, ".tools", "ort", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "onnxruntime-node", "package.json")); err != nil {
		return setup{reason: fmt.Sprintf("onnxruntime-node not found in %s (set %s or install it there with npm)", dir, EnvDir)}
	}
	// Loading the binding checks the native library too.
	script := fmt.Sprintf("require(%q)", filepath.Join(dir, "onnxruntime-node"))
	var stderr bytes.Buffer
	cmd := exec.Command(node, "-e", script)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return setup{reason: fmt.Sprintf("onnxruntime-node in %s does not load: %v: %s", dir, err, firstLines(stderr.String(), 3))}
	}
	return setup{node: node, ortDir: dir}
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Available reports whether node and onnxruntime-node were found and the
// binding loads; if not, reason says what is missing.
func Available() (ok bool, reason string) {
	s := locate()
	return s.reason == "", s.reason
}

// Require skips the test when ONNX Runtime is unavailable, or fails it
// when the CI environment variable is set (CI must run these tests).
func Require(t testing.TB) {
	t.Helper()
	ok, reason := Available()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("ortcheck: ONNX Runtime is required in CI: %s", reason)
	}
	t.Skipf("ortcheck: ONNX Runtime unavailable: %s", reason)
}

// ortTypes maps element types to the names onnxruntime-node uses.
var ortTypes = map[importer.DataType]string{
	onnxpb.TensorProto_FLOAT: "float32", onnxpb.TensorProto_DOUBLE: "float64",
	onnxpb.TensorProto_INT64: "int64", onnxpb.TensorProto_INT32: "int32",
	onnxpb.TensorProto_INT16: "int16", onnxpb.TensorProto_INT8: "int8",
	onnxpb.TensorProto_UINT8: "uint8", onnxpb.TensorProto_UINT16: "uint16",
	onnxpb.TensorProto_UINT32: "uint32", onnxpb.TensorProto_UINT64: "uint64",
	onnxpb.TensorProto_BOOL: "bool",
}

// fromORT maps onnxruntime-node's type names back to element types.
// float16 outputs are widened to float32 by the importer's decoder.
var fromORT = func() map[string]importer.DataType {
	m := make(map[string]importer.DataType, len(ortTypes)+1)
	for k, v := range ortTypes {
		m[v] = k
	}
	m["float16"] = onnxpb.TensorProto_FLOAT16
	return m
}()

type jobTensor struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

type job struct {
	Model    string      `json:"model"`
	OptLevel string      `json:"optLevel"`
	Threads  int         `json:"threads"`
	Inputs   []jobTensor `json:"inputs"`
}

type result struct {
	Outputs []jobTensor `json:"outputs"`
}

// Run runs the model in modelPath in ONNX Runtime (CPU, graph
// optimisations disabled) on inputs, keyed by graph input name, and
// returns every graph output keyed by name. Supported element types:
// float32, float64 and the integer types and bool (inputs are taken from
// the Tensor's F32, F64 or I64 slice according to its Type). Errors carry
// ONNX Runtime's own message.
func Run(modelPath string, inputs map[string]*importer.Tensor) (map[string]*importer.Tensor, error) {
	s := locate()
	if s.reason != "" {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, s.reason)
	}
	abs, err := filepath.Abs(modelPath)
	if err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	dir, err := os.MkdirTemp("", "ortcheck-")
	if err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	defer os.RemoveAll(dir)

	j := job{Model: abs, OptLevel: "disabled", Threads: 1, Inputs: []jobTensor{}}
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		jt, err := writeTensor(dir, fmt.Sprintf("in_%d.bin", i), name, inputs[name])
		if err != nil {
			return nil, err
		}
		j.Inputs = append(j.Inputs, jt)
	}
	if err := writeJSON(filepath.Join(dir, "job.json"), j); err != nil {
		return nil, err
	}
	runner := filepath.Join(dir, "runner.js")
	if err := os.WriteFile(runner, runnerJS, 0o600); err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(s.node, runner, s.ortDir, dir)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("ortcheck: %s: %s", filepath.Base(modelPath), strings.TrimPrefix(msg, "ortcheck: "))
	}
	var res result
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, fmt.Errorf("ortcheck: runner wrote no result: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("ortcheck: bad result manifest: %w", err)
	}
	out := make(map[string]*importer.Tensor, len(res.Outputs))
	for _, o := range res.Outputs {
		t, err := readTensor(dir, o)
		if err != nil {
			return nil, err
		}
		out[o.Name] = t
	}
	return out, nil
}

// RunBytes is Run for a serialized model held in memory.
func RunBytes(model []byte, inputs map[string]*importer.Tensor) (map[string]*importer.Tensor, error) {
	f, err := os.CreateTemp("", "ortcheck-*.onnx")
	if err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(model); err != nil {
		f.Close()
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("ortcheck: %w", err)
	}
	return Run(f.Name(), inputs)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ortcheck: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("ortcheck: %w", err)
	}
	return nil
}

// writeTensor writes t's values as raw little-endian bytes of its type.
func writeTensor(dir, file, name string, t *importer.Tensor) (jobTensor, error) {
	if t == nil {
		return jobTensor{}, fmt.Errorf("ortcheck: input %q is nil", name)
	}
	typ, ok := ortTypes[t.Type]
	if !ok {
		return jobTensor{}, fmt.Errorf("ortcheck: input %q: element type %v is not supported", name, t.Type)
	}
	n := t.Len()
	var buf []byte
	le := binary.LittleEndian
	switch t.Type {
	case onnxpb.TensorProto_FLOAT:
		if len(t.F32) != n {
			return jobTensor{}, fmt.Errorf("ortcheck: input %q: %d float32 values for shape %v", name, len(t.F32), t.Shape)
		}
		buf = make([]byte, 4*n)
		for i, v := range t.F32 {
			le.PutUint32(buf[4*i:], math.Float32bits(v))
		}
	case onnxpb.TensorProto_DOUBLE:
		if len(t.F64) != n {
			return jobTensor{}, fmt.Errorf("ortcheck: input %q: %d float64 values for shape %v", name, len(t.F64), t.Shape)
		}
		buf = make([]byte, 8*n)
		for i, v := range t.F64 {
			le.PutUint64(buf[8*i:], math.Float64bits(v))
		}
	default:
		if len(t.I64) != n {
			return jobTensor{}, fmt.Errorf("ortcheck: input %q: %d integer values for shape %v", name, len(t.I64), t.Shape)
		}
		buf = packInts(t.Type, t.I64)
	}
	if err := os.WriteFile(filepath.Join(dir, file), buf, 0o600); err != nil {
		return jobTensor{}, fmt.Errorf("ortcheck: %w", err)
	}
	shape := t.Shape
	if shape == nil {
		shape = []int{}
	}
	return jobTensor{Name: name, Type: typ, Shape: shape, File: file}, nil
}

func packInts(dt importer.DataType, v []int64) []byte {
	le := binary.LittleEndian
	switch dt {
	case onnxpb.TensorProto_INT8, onnxpb.TensorProto_UINT8, onnxpb.TensorProto_BOOL:
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x)
		}
		return b
	case onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16:
		b := make([]byte, 2*len(v))
		for i, x := range v {
			le.PutUint16(b[2*i:], uint16(x))
		}
		return b
	case onnxpb.TensorProto_INT32, onnxpb.TensorProto_UINT32:
		b := make([]byte, 4*len(v))
		for i, x := range v {
			le.PutUint32(b[4*i:], uint32(x))
		}
		return b
	default:
		b := make([]byte, 8*len(v))
		for i, x := range v {
			le.PutUint64(b[8*i:], uint64(x))
		}
		return b
	}
}

// readTensor decodes one output file written by the runner.
func readTensor(dir string, o jobTensor) (*importer.Tensor, error) {
	dt, ok := fromORT[o.Type]
	if !ok {
		return nil, fmt.Errorf("ortcheck: output %q: element type %q is not supported", o.Name, o.Type)
	}
	raw, err := os.ReadFile(filepath.Join(dir, o.File))
	if err != nil {
		return nil, fmt.Errorf("ortcheck: output %q: %w", o.Name, err)
	}
	// Reuse the importer's raw-data decoder through a TensorProto.
	dims := make([]int64, len(o.Shape))
	for i, d := range o.Shape {
		dims[i] = int64(d)
	}
	dtInt := int32(dt)
	tp := &onnxpb.TensorProto{Name: &o.Name, DataType: &dtInt, Dims: dims, RawData: raw}
	if raw == nil {
		tp.RawData = []byte{}
	}
	t, err := importer.DecodeTensor(tp)
	if err != nil {
		return nil, fmt.Errorf("ortcheck: output %q: %w", o.Name, err)
	}
	return t, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
