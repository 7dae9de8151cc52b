package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
)

var inspectCommand = withInterspersed(withConfig(&ucli.Command{
	Name:      "inspect",
	Usage:     "what an ONNX model holds and what paretonav can train in it",
	ArgsUsage: "MODEL.onnx",
	Description: `Prints the model's inputs and outputs with their shapes (dynamic dimensions
by name), IR version and opsets, op counts, the number of parameters (elements
of floating-point initializers), the initializers tune would train (--freeze
to try patterns), the trainable initializers that several nodes read (trained
as one unless tune/front --untie), and every op backend cannot run, with the
nodes that use it and the ONNX node tests of that op backend does not pass.
With --batch B, the memory one training step at batch B is expected to need
(one mse task per float output stands in for the tasks; only a batch
dimension may be dynamic).`,
	Flags: []ucli.Flag{freezeFlag, jsonFlag, maxMemoryFlag,
		&ucli.IntFlag{Name: "batch", Usage: "estimate the peak memory of a training step at batch `B`"}},
	Action: runInspect,
}))

func init() { register(inspectCommand) }

// inspectValue is one graph input or output.
type inspectValue struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Shape []string `json:"shape"` // sizes, or the dimension's name ("?" when unnamed)
}

// inspectInit is one trainable initializer.
type inspectInit struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Size  int    `json:"size"`
}

// inspectJSON is what inspect --json prints.
type inspectJSON struct {
	File      string           `json:"file"`
	IRVersion int64            `json:"ir_version"`
	Opsets    map[string]int64 `json:"opsets"`
	Producer  string           `json:"producer,omitempty"`
	Inputs    []inspectValue   `json:"inputs"`
	Outputs   []inspectValue   `json:"outputs"`
	Ops       map[string]int   `json:"ops"`
	// Functions are the model's ONNX local functions (domain.name),
	// inlined into the graph that ops and nodes count.
	Functions   []string      `json:"local_functions,omitempty"`
	Nodes       int           `json:"nodes"`
	Params      int64         `json:"parameters"`
	Trainable   []inspectInit `json:"trainable"`
	TrainParams int           `json:"trainable_parameters"`
	Unsupported []string      `json:"unsupported"`
	// UnsupportedNodes says, per unsupported op, which nodes use it and
	// which ONNX node tests of that op backend does not pass.
	UnsupportedNodes []inspectUnsupported `json:"unsupported_nodes"`
	// Shared lists the trainable initializers read by several nodes
	// (training ties them; tune --untie unties them).
	Shared    []importer.Shared `json:"shared_initializers"`
	OpenError string            `json:"open_error,omitempty"`
	Batch     int               `json:"batch,omitempty"`
	// MemoryBytes is the expected peak of a tune step at Batch.
	MemoryBytes int64             `json:"memory_bytes,omitempty"`
	Memory      string            `json:"memory,omitempty"`
	MemoryError string            `json:"memory_error,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// Warnings are what tune would warn about the file before its first
	// step: initializers torch.onnx.export's optimizer rewrote, float
	// tensors the dynamo exporter stored as constants.
	Warnings []string `json:"warnings,omitempty"`
}

// inspectUnsupported is one op backend cannot lower.
type inspectUnsupported struct {
	Op        string   `json:"op"`
	Opset     int64    `json:"opset"`
	Nodes     []string `json:"nodes"`
	NodeTests []string `json:"node_tests_not_passed"`
}

func runInspect(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 1 {
		return fmt.Errorf("inspect: want one MODEL.onnx argument, got %d (%s)", len(args), strings.Join(args, " "))
	}
	budget, err := job.ResolveBudget(c.String(maxMemoryFlag.Name))
	if err != nil {
		return err
	}
	m, err := importer.LoadWithin(args[0], budget)
	if err != nil {
		return err
	}
	info, err := inspectModel(args[0], m, c.StringSlice(freezeFlag.Name), budget)
	if err != nil {
		return err
	}
	if b := c.Int("batch"); b != 0 {
		if b < 0 {
			return fmt.Errorf("--batch %d: want at least 1", b)
		}
		inspectMemory(info, m, c.StringSlice(freezeFlag.Name), b, budget)
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, info)
	}
	return inspectSummary(c.App.Writer, info)
}

// inspectModel gathers what inspect shows.
func inspectModel(path string, m *importer.Model, freeze []string, budget importer.Budget) (*inspectJSON, error) {
	mp := m.Proto
	g := mp.GetGraph()
	info := &inspectJSON{File: path, IRVersion: mp.GetIrVersion(), Opsets: map[string]int64{}, Ops: map[string]int{},
		Nodes: len(g.GetNode()), Unsupported: []string{}, UnsupportedNodes: []inspectUnsupported{},
		Shared: []importer.Shared{}, Trainable: []inspectInit{}, Metadata: map[string]string{}}
	if mp.GetProducerName() != "" {
		info.Producer = strings.TrimSpace(mp.GetProducerName() + " " + mp.GetProducerVersion())
	}
	for _, o := range mp.GetOpsetImport() {
		d := o.GetDomain()
		if d == "" {
			d = "ai.onnx"
		}
		info.Opsets[d] = o.GetVersion()
	}
	for _, kv := range mp.GetMetadataProps() {
		info.Metadata[kv.GetKey()] = kv.GetValue()
	}
	for _, f := range mp.GetFunctions() {
		info.Functions = append(info.Functions, f.GetDomain()+"."+f.GetName())
	}
	inits := map[string]bool{}
	for _, tp := range g.GetInitializer() {
		inits[tp.GetName()] = true
		switch importer.DataType(tp.GetDataType()) {
		case importer.Float32, importer.Float64, importer.Float16, onnxpb.TensorProto_BFLOAT16:
			n := int64(1)
			for _, d := range tp.GetDims() {
				n *= d
			}
			info.Params += n
		}
	}
	for _, vi := range g.GetInput() {
		if !inits[vi.GetName()] {
			info.Inputs = append(info.Inputs, valueOf(vi))
		}
	}
	for _, vi := range g.GetOutput() {
		info.Outputs = append(info.Outputs, valueOf(vi))
	}
	for _, n := range g.GetNode() {
		op := n.GetOpType()
		if d := n.GetDomain(); d != "" && d != "ai.onnx" {
			op = d + "." + op
		}
		info.Ops[op]++
	}
	// Without a backend model, every float initializer read by several
	// nodes may be trainable.
	decoded, err := m.Initializers()
	if err != nil {
		return nil, err
	}
	for _, s := range m.SharedInitializers() {
		if t := decoded[s.Name]; t != nil && t.IsFloat() {
			info.Shared = append(info.Shared, s)
		}
	}
	// The trainable initializers do not depend on the tasks: open the
	// model with a placeholder task on its first output. Open's trial
	// build also gives the verdict on ops, as tune's build would: ops
	// whose inputs are known when the graph is built (shape arithmetic)
	// are folded, not lowered.
	if len(info.Outputs) == 0 {
		addUnsupported(info, m, staticUnsupported(m))
	} else {
		t := backend.Task{Name: "inspect", Loss: "mse", Output: info.Outputs[0].Name, Target: "inspect_target", IgnoreIndex: -100, Options: map[string]string{}}
		md, err := backend.Open(m, []backend.Task{t}, backend.Options{Freeze: freeze, MaxBytes: budget.Bytes, MaxBytesFrom: budget.From})
		var ue *backend.UnsupportedError
		switch {
		case errors.As(err, &ue):
			addUnsupported(info, m, ue.Ops)
		case err != nil:
			info.OpenError = err.Error()
		default:
			info.Shared = append([]importer.Shared{}, md.SharedInitializers()...)
			for _, p := range md.Trainable() {
				size := 1
				for _, d := range p.Shape {
					size *= d
				}
				info.Trainable = append(info.Trainable, inspectInit{Name: p.Name, Shape: p.Shape, Size: size})
				info.TrainParams += size
			}
		}
	}
	for _, w := range []string{job.RewrittenWarning(path, m), job.ConstantsWarning(path, m)} {
		if w != "" {
			info.Warnings = append(info.Warnings, w)
		}
	}
	return info, nil
}

// staticUnsupported lists the nodes whose op backend does not lower at the
// model's opset, for a model that cannot be opened (it has no outputs);
// it does not know which of them would be folded.
func staticUnsupported(m *importer.Model) []backend.UnsupportedOp {
	var out []backend.UnsupportedOp
	for i, n := range m.Proto.GetGraph().GetNode() {
		d := n.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if d == "" && backend.Supported(n.GetOpType(), m.Opset("")) {
			continue
		}
		name := n.GetName()
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		out = append(out, backend.UnsupportedOp{OpType: n.GetOpType(), Domain: d, Node: name, Opset: m.Opset(d)})
	}
	return out
}

// addUnsupported fills info's unsupported ops and nodes from ops.
func addUnsupported(info *inspectJSON, m *importer.Model, ops []backend.UnsupportedOp) {
	unsup := map[string]*inspectUnsupported{}
	for _, o := range ops {
		op := o.OpType
		if o.Domain != "" {
			op = o.Domain + "." + op
		}
		u := unsup[op]
		if u == nil {
			opset := m.Opset(o.Domain)
			u = &inspectUnsupported{Op: op, Opset: opset, NodeTests: backend.NodeTestsNotPassed(op)}
			if u.NodeTests == nil {
				u.NodeTests = []string{}
			}
			unsup[op] = u
			info.Unsupported = append(info.Unsupported, fmt.Sprintf("%s (opset %d)", op, opset))
		}
		u.Nodes = append(u.Nodes, o.Node)
	}
	sort.Strings(info.Unsupported)
	for _, u := range unsup {
		info.UnsupportedNodes = append(info.UnsupportedNodes, *u)
	}
	sort.Slice(info.UnsupportedNodes, func(i, j int) bool { return info.UnsupportedNodes[i].Op < info.UnsupportedNodes[j].Op })
}

func valueOf(vi *onnxpb.ValueInfoProto) inspectValue {
	v := inspectValue{Name: vi.GetName(), Shape: []string{}}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		v.Type = "non-tensor"
		return v
	}
	v.Type = strings.ToLower(onnxpb.TensorProto_DataType(tt.GetElemType()).String())
	for _, d := range tt.GetShape().GetDim() {
		switch {
		case d.GetDimParam() != "":
			v.Shape = append(v.Shape, d.GetDimParam())
		case d.GetDimValue() > 0:
			v.Shape = append(v.Shape, fmt.Sprint(d.GetDimValue()))
		default:
			v.Shape = append(v.Shape, "?")
		}
	}
	return v
}

func inspectSummary(w io.Writer, info *inspectJSON) error {
	w = termsafe.NewWriter(w) // names from the model, data and jobs files
	var opsets []string
	for d, v := range info.Opsets {
		opsets = append(opsets, fmt.Sprintf("%s %d", d, v))
	}
	sort.Strings(opsets)
	fmt.Fprintf(w, "%s: IR %d, opset %s", info.File, info.IRVersion, strings.Join(opsets, ", "))
	if info.Producer != "" {
		fmt.Fprintf(w, ", producer %s", info.Producer)
	}
	fmt.Fprintln(w)
	show := func(label string, vs []inspectValue) {
		fmt.Fprintf(w, "%s\n", label)
		for _, v := range vs {
			fmt.Fprintf(w, "  %-20s %s [%s]\n", v.Name, v.Type, strings.Join(v.Shape, ","))
		}
	}
	show("inputs", info.Inputs)
	show("outputs", info.Outputs)
	ops := make([]string, 0, len(info.Ops))
	for op := range info.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for i, op := range ops {
		ops[i] = fmt.Sprintf("%s×%d", op, info.Ops[op])
	}
	fmt.Fprintf(w, "nodes %d: %s\n", info.Nodes, strings.Join(ops, " "))
	if len(info.Functions) > 0 {
		fmt.Fprintf(w, "local functions %d, inlined above: %s\n", len(info.Functions), abbreviate(info.Functions, 8))
	}
	fmt.Fprintf(w, "parameters %d\n", info.Params)
	switch {
	case len(info.Unsupported) > 0:
		fmt.Fprintf(w, "unsupported ops: %s (the model cannot be tuned)\n", strings.Join(info.Unsupported, ", "))
		for _, u := range info.UnsupportedNodes {
			fmt.Fprintf(w, "  %s: %d node(s): %s\n", u.Op, len(u.Nodes), abbreviate(u.Nodes, 8))
			if len(u.NodeTests) > 0 {
				fmt.Fprintf(w, "    ONNX node tests not passed: %s\n", abbreviate(u.NodeTests, 8))
			}
		}
	case info.OpenError != "":
		fmt.Fprintf(w, "cannot be tuned: %s\n", info.OpenError)
	default:
		fmt.Fprintf(w, "trainable: %d initializers, %d parameters\n", len(info.Trainable), info.TrainParams)
		for _, p := range info.Trainable {
			fmt.Fprintf(w, "  %-32s %v\n", p.Name, p.Shape)
		}
		fmt.Fprintln(w, "all ops supported")
	}
	if len(info.Shared) > 0 {
		fmt.Fprintf(w, "shared initializers: %d, each read by several nodes and trained as one (tune --untie gives each node its own copy)\n", len(info.Shared))
		for _, s := range info.Shared {
			fmt.Fprintf(w, "  %-32s %s\n", s.Name, abbreviate(s.Consumers, 8))
			if !slices.Equal(s.Readers, s.Consumers) {
				fmt.Fprintf(w, "  %-32s through Identity: %s\n", "", abbreviate(s.Readers, 8))
			}
		}
	}
	for _, warn := range info.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	switch {
	case info.MemoryError != "":
		fmt.Fprintf(w, "memory at batch %d: %s\n", info.Batch, info.MemoryError)
	case info.Memory != "":
		fmt.Fprintf(w, "memory at batch %d: %s\n", info.Batch, info.Memory)
	}
	if v, ok := info.Metadata["paretonav"]; ok {
		fmt.Fprintf(w, "tuned by paretonav: %s\n", v)
	}
	return nil
}

// abbreviate joins the first k of names, saying how many more there are.
func abbreviate(names []string, k int) string {
	if len(names) <= k {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d more)", strings.Join(names[:k], ", "), len(names)-k)
}

// inspectMemory estimates a tune step at batch b, with one mse task per
// float output standing in for the tasks, into info.
func inspectMemory(info *inspectJSON, m *importer.Model, freeze []string, b int, budget importer.Budget) {
	info.Batch = b
	if len(info.Unsupported) > 0 || info.OpenError != "" {
		info.MemoryError = "the model cannot be tuned"
		return
	}
	var tasks []backend.Task
	for i, o := range info.Outputs {
		if strings.HasPrefix(o.Type, "float") || o.Type == "double" {
			tasks = append(tasks, backend.Task{Name: fmt.Sprintf("t%d", i), Loss: "mse", Output: o.Name, Target: o.Name + "#target", IgnoreIndex: -100, Options: map[string]string{}})
		}
	}
	if len(tasks) == 0 {
		info.MemoryError = "no float output to stand in for a task"
		return
	}
	md, err := backend.Open(m, tasks, backend.Options{Freeze: freeze, MaxBytes: budget.Bytes, MaxBytesFrom: budget.From})
	if err != nil {
		info.MemoryError = err.Error()
		return
	}
	if err := job.CheckInputSizes(md, b, budget); err != nil {
		info.MemoryError = err.Error()
		return
	}
	e, err := md.EstimateMemoryBatch(b)
	if err != nil {
		info.MemoryError = err.Error()
		return
	}
	loop := job.TuneLoopBytes(len(md.Tasks()), md.NumParams())
	info.MemoryBytes = e.Total() + loop
	info.Memory = fmt.Sprintf("%s: step %s, loop %s", backend.FormatBytes(info.MemoryBytes), e, backend.FormatBytes(loop))
}
