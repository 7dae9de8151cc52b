package backend

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"path"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/loss"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/internal/hugepages"
	"github.com/paretonav/paretonav/internal/termsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	// the op lowerings register themselves with graph's registry
	_ "github.com/paretonav/paretonav/backend/internal/onnxops"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
)

// Options configure Open. The zero value trains every weight in float32
// with BatchNormalization using its running statistics.
type Options struct {
	// BatchNorm is "frozen" (default, "": running statistics, PyTorch's
	// eval mode) or "train" (batch statistics).
	BatchNorm string
	// Freeze lists path.Match globs; initializers whose names match one
	// are not trained.
	Freeze []string
	// Float64 computes in float64 (gradient checks); default float32.
	Float64 bool
	// Terms are losses beyond the tasks (same syntax, same loss kinds)
	// that a criterion may read by name: Terms and EvaluateTerms report
	// them and their gradients, Tasks and Evaluate leave them out.
	Terms []Task
	// Untie gives every node reading a trainable initializer that several
	// nodes read its own copy (importer.Model.Untie, on the model given
	// to Open, so that saving it keeps the copies); see shared.go.
	Untie bool
	// MaxBytes, when positive, bounds the memory of one graph input as
	// declared (dynamic dimensions counted as the trial build's 2):
	// Open refuses an input over it, or over importer.MaxElements
	// elements, by name and shape before building anything for it.
	// MaxBytesFrom says where the bound comes from, for the error.
	MaxBytes     int64
	MaxBytesFrom string

	// build chooses the fast paths the graphs are built with (fusions,
	// convolutions' trimmed kernels); tests turn one off to compare.
	build graph.Options
	// exec, when set, are the executor's options (defaultExec otherwise);
	// tests turn a fast path off to compare.
	exec *execOptions
}

// Param is one trainable initializer and where it lives in the flat
// parameter vector.
type Param struct {
	Name   string
	Shape  []int
	Offset int
}

// Input describes a model input; Shape has -1 for dynamic dimensions.
type Input struct {
	Name  string
	Shape []int
	Type  importer.DataType
}

// Model is an ONNX model with task losses appended; it implements
// finetune.Problem. It is not safe for concurrent use.
type Model struct {
	m      *importer.Model
	tasks  []Task    // the tasks, then Options.Terms: every loss the graph computes
	ntasks int       // how many of tasks are tasks
	times  StepTimes // of the last Evaluate
	pool   *bufPool  // dead float32 buffers, shared by every program of the model
	opt    Options
	opset  int64
	dt     tensor.Dtype
	inits  map[string]*importer.Tensor
	params []Param
	theta  []float32
	// paramIdx is the index in params of each parameter's name.
	paramIdx map[string]int
	inputs   []Input
	cache    map[string]*compiled
	static   map[string]bool     // inputs bound when the graph is built (intinputs.go)
	shared   []importer.Shared   // trainable initializers read by several nodes (shared.go)
	untied   map[string][]string // the copies Options.Untie made
	run      *execOptions        // the executor's options, read by every program when it runs
	stats    *execStats          // what the programs' fast paths did, for tests
}

// compiled is the graph for one signature of input and target shapes.
type compiled struct {
	bt      *graph.Built
	targets []graph.Node // per task; nil for a kind without target ("output")
	u       []graph.Node // per task: weight of the task's loss in the backward pass
	losses  []graph.Node
	hasGrad []bool                       // per task: some trainable parameter affects the loss
	wrt     []int                        // indices into Model.params of the differentiated params
	sink    graph.Node                   // [losses..., gradients of wrt...]
	lossOut graph.Node                   // [losses...]
	grads   G.Nodes                      // per wrt parameter: its gradient of Σ u_i·ℓ_i
	prog    *program                     // runs losses once, gradients per task
	gradAt  map[int]int                  // per position in prog of a parameter gradient: the parameter (gradPlaces)
	bufs    map[graph.Node]*tensor.Dense // float32 input values, refilled per Evaluate
	fwd     *program                     // Outputs' forward pass (no task weights)
	stats   *execStats                   // the Model's, for bindParam's count
}

// Open prepares m for training the given tasks: it checks that every
// task's output exists and its loss kind is known, that every op is
// supported (one error listing them all), and chooses the trainable
// initializers. With no tasks the model only runs Outputs.
func Open(m *importer.Model, tasks []Task, opt Options) (*Model, error) {
	switch opt.BatchNorm {
	case "", "frozen", "train":
	default:
		return nil, fmt.Errorf("backend: BatchNorm mode %q: expected \"frozen\" or \"train\"", opt.BatchNorm)
	}
	for _, g := range opt.Freeze {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("backend: freeze pattern %q: %w", g, err)
		}
	}
	inits, err := m.Initializers()
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	if len(opt.Freeze) > 0 {
		names := make([]string, 0, len(m.Proto.Graph.Initializer))
		for _, tp := range m.Proto.Graph.Initializer {
			names = append(names, tp.GetName())
		}
		if err := checkFreeze(opt.Freeze, names); err != nil {
			return nil, err
		}
	}
	run := defaultExec()
	if opt.exec != nil {
		run = *opt.exec
	}
	md := &Model{m: m, tasks: append(append([]Task(nil), tasks...), opt.Terms...), ntasks: len(tasks), opt: opt, opset: m.Opset(""), dt: tensor.Float32, inits: inits, cache: map[string]*compiled{},
		run: &run, stats: &execStats{}}
	if opt.Float64 {
		md.dt = tensor.Float64
	}
	gp := m.Proto.Graph
	produced := map[string]bool{}
	for _, n := range gp.Node {
		for _, o := range n.Output {
			produced[o] = true
		}
	}
	seen := map[string]bool{}
	var errs []error
	for i, t := range md.tasks {
		kind := md.kind(i)
		if loss.Lookup(t.Loss) == nil {
			errs = append(errs, fmt.Errorf("%s %q: unknown loss %q (known: %s)", kind, t.Name, t.Loss, strings.Join(LossKinds(), ", ")))
		}
		if !produced[t.Output] {
			errs = append(errs, fmt.Errorf("%s %q: the model has no output %q (outputs: %s; any node's output may be named, paretonav inspect lists the nodes)",
				kind, t.Name, t.Output, graphOutputs(gp)))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s %q: name used twice (tasks and terms need distinct names)", kind, t.Name))
		}
		seen[t.Name] = true
	}
	for _, vi := range gp.Input {
		if _, ok := inits[vi.GetName()]; ok {
			continue
		}
		in := Input{Name: vi.GetName()}
		if tt := vi.GetType().GetTensorType(); tt != nil {
			in.Type = importer.DataType(tt.GetElemType())
			for _, d := range tt.GetShape().GetDim() {
				if d.GetDimParam() == "" && d.GetDimValue() > 0 {
					in.Shape = append(in.Shape, int(d.GetDimValue()))
				} else {
					in.Shape = append(in.Shape, -1)
				}
			}
		}
		md.inputs = append(md.inputs, in)
	}
	md.chooseParams()
	if err := md.findShared(); err != nil {
		errs = append(errs, err)
	}
	md.static = md.staticInputs()
	if err := md.checkIntInputs(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("backend: %w", errors.Join(errs...))
	}
	// A trial build with dynamic dimensions set to 2 lists unsupported ops.
	shapes := map[string][]int{}
	for _, in := range md.inputs {
		s := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			s[i] = d
			if d < 0 {
				s[i] = 2
			}
		}
		shapes[in.Name] = s
		if err := checkInputSize(in, s, opt); err != nil {
			return nil, fmt.Errorf("backend: %w", err)
		}
	}
	if _, err := md.compile(shapes, nil, nil); err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	return md, nil
}

// constOperand lists, per op, the inputs that are shape-like operands, not
// data: initializers consumed only there are not trained.
var constOperand = map[string][]int{
	"Reshape": {1}, "Unsqueeze": {1}, "Squeeze": {1}, "Slice": {1, 2, 3, 4}, "Split": {1},
	"ReduceSum": {1}, "ReduceMean": {1}, "ReduceL2": {1}, "Clip": {1, 2}, "Expand": {1},
	"Tile": {1}, "ConstantOfShape": {0}, "Resize": {1, 2, 3}, "Upsample": {1}, "Pad": {1, 2, 3},
	"Gather": {1}, "BatchNormalization": {3, 4}, "Dropout": {1, 2}, "Shape": {0}, "Size": {0},
	"Range": {0, 1, 2}, "TopK": {1}, "MaxUnpool": {1, 2},
}

// chooseParams picks the trainable initializers (float, used as data by
// some node, not frozen, not marked by PyTorch's dynamo exporter as a
// buffer or constant: importer.Model.NotParameters), in graph order, and
// fills theta.
func (md *Model) chooseParams() {
	notParam := md.m.NotParameters()
	data := map[string]bool{}
	for _, n := range md.m.Proto.Graph.Node {
		skip := map[int]bool{}
		for _, i := range constOperand[n.GetOpType()] {
			skip[i] = true
		}
		for i, s := range n.Input {
			if !skip[i] {
				data[s] = true
			}
		}
	}
	var chosen []*importer.Tensor
	n := 0
	md.paramIdx = map[string]int{}
	for _, tp := range md.m.Proto.Graph.Initializer {
		name := tp.GetName()
		t := md.inits[name]
		if _, isConst := notParam[name]; t == nil || !t.IsFloat() || !data[name] || isConst || md.frozen(name) {
			continue
		}
		md.paramIdx[name] = len(md.params)
		md.params = append(md.params, Param{Name: name, Shape: append([]int{}, t.Shape...), Offset: n})
		chosen = append(chosen, t)
		n += shape.Numel(t.Shape)
	}
	md.theta = make([]float32, 0, n) // exactly θ's length: it is the model's largest vector
	hugepages.Advise(md.theta[:n])
	for _, t := range chosen {
		if t.F32 == nil {
			for _, v := range t.Float64s() {
				md.theta = append(md.theta, float32(v))
			}
			continue
		}
		// A float32 initializer's decoded values become a view of θ,
		// so that the model holds them once. What reads md.inits for a
		// parameter (its type and shape, a graph's starting values) is
		// content with θ's current values.
		off := len(md.theta)
		md.theta = append(md.theta, t.F32...)
		t.F32 = md.theta[off:len(md.theta):len(md.theta)]
	}
}

func (md *Model) frozen(name string) bool {
	for _, g := range md.opt.Freeze {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Tasks returns the task names in loss order.
func (md *Model) Tasks() []string {
	out := make([]string, md.ntasks)
	for i, t := range md.tasks[:md.ntasks] {
		out[i] = t.Name
	}
	return out
}

// Terms returns the names of Options.Terms, in order.
func (md *Model) Terms() []string {
	var out []string
	for _, t := range md.tasks[md.ntasks:] {
		out = append(out, t.Name)
	}
	return out
}

// kind says whether loss i is a "task" or a "term", for messages.
func (md *Model) kind(i int) string {
	if i < md.ntasks {
		return "task"
	}
	return "term"
}

// NumParams returns the length of the flat parameter vector.
func (md *Model) NumParams() int { return len(md.theta) }

// Params copies the current parameters into dst.
func (md *Model) Params(dst []float32) { copy(dst, md.theta) }

// SetParams replaces the parameters with src (which may be Theta itself).
func (md *Model) SetParams(src []float32) error {
	if len(src) != len(md.theta) {
		return fmt.Errorf("backend: SetParams: %d values, the model has %d parameters", len(src), len(md.theta))
	}
	if len(src) > 0 && &src[0] == &md.theta[0] {
		return nil
	}
	copy(md.theta, src)
	return nil
}

// Theta returns θ itself, the flat parameter vector every graph of the
// model reads (finetune.SharedParams): writing into it sets the
// parameters, as SetParams does, without a second copy of them.
func (md *Model) Theta() []float32 { return md.theta }

// Lends reports that the model lends buffers (finetune.ScratchLender).
func (md *Model) Lends() bool { return true }

// Lend returns a buffer of n float32 values (contents undefined) from the
// pool the evaluations draw their values from (finetune.ScratchLender):
// between two evaluations the pool's buffers are idle, and a lent buffer
// takes the place of some of them within the pool's limit instead of
// adding to them. Once given back, the evaluation that follows carves its
// values out of it (bufPool.lend), so that the buffers it took the place
// of are not allocated again; the next Lend takes it back whole. Return it
// with TakeBack before the next evaluation.
func (md *Model) Lend(n int) []float32 { return md.bufPool().lend(n) }

// TakeBack returns a buffer Lend gave to the pool; nothing may read or
// write it afterwards.
func (md *Model) TakeBack(b []float32) { md.bufPool().giveBack(b) }

// Trainable returns the trainable initializers in flat-vector order.
func (md *Model) Trainable() []Param {
	out := make([]Param, len(md.params))
	for i, p := range md.params {
		out[i] = Param{Name: p.Name, Shape: append([]int{}, p.Shape...), Offset: p.Offset}
	}
	return out
}

// Inputs returns the model's inputs (initializers excluded).
func (md *Model) Inputs() []Input {
	out := make([]Input, len(md.inputs))
	for i, in := range md.inputs {
		out[i] = Input{Name: in.Name, Shape: append([]int{}, in.Shape...), Type: in.Type}
	}
	return out
}

// Weights returns the current values of the trainable initializers, by
// name, in their original element types (for saving).
func (md *Model) Weights() map[string]*importer.Tensor {
	out := map[string]*importer.Tensor{}
	for _, p := range md.params {
		orig := md.inits[p.Name]
		v := md.theta[p.Offset : p.Offset+shape.Numel(p.Shape)]
		t := &importer.Tensor{Name: p.Name, Type: orig.Type, Shape: append([]int{}, p.Shape...)}
		if orig.F64 != nil {
			t.F64 = make([]float64, len(v))
			for i, x := range v {
				t.F64[i] = float64(x)
			}
		} else {
			t.F32 = append([]float32{}, v...)
		}
		out[p.Name] = t
	}
	return out
}

// CheckBatch checks b against the model inputs and task targets: every
// array present, shapes compatible with the model, class labels in range.
// Errors name the array and the input or task.
func (md *Model) CheckBatch(b map[string]*importer.Tensor) error {
	shapes, err := md.inputShapes(b)
	if err != nil {
		return err
	}
	ints, err := md.batchInts(b)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	c, err := md.compile(shapes, ints, nil) // without targets: output shapes
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	var errs []error
	for i, t := range md.tasks {
		kind := md.kind(i)
		h := loss.Lookup(t.Loss)
		if h.TargetShape == nil {
			continue
		}
		out := c.bt.Vals[t.Output]
		want, err := h.TargetShape(out.Shape)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: output %q: %v", kind, t.Name, t.Output, err))
			continue
		}
		a, ok := b[t.Target]
		if !ok || a == nil {
			errs = append(errs, fmt.Errorf("%s %q: no target array %q in the data (arrays: %s)", kind, t.Name, t.Target, arrayNames(b)))
			continue
		}
		if !shape.Equal(a.Shape, want) {
			errs = append(errs, fmt.Errorf("%s %q: target array %q has shape %v, expected %v for output %q of shape %v", kind, t.Name, t.Target, a.Shape, want, t.Output, out.Shape))
			continue
		}
		if h.IntegerTarget {
			C := int64(out.Shape[1])
			for i := range a.Len() {
				v := tensorFloat64(a, i)
				if v != math.Trunc(v) || ((int64(v) < 0 || int64(v) >= C) && int64(v) != t.IgnoreIndex) {
					errs = append(errs, fmt.Errorf("%s %q: target array %q: element %d is %v, expected a class in [0, %d) or ignore_index %d", kind, t.Name, t.Target, i, v, C, t.IgnoreIndex))
					break
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("backend: %w", errors.Join(errs...))
	}
	return nil
}

// signature keys the compiled-graph cache.
func signature(shapes map[string][]int) string {
	keys := make([]string, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%q%v;", k, shapes[k])
	}
	return sb.String()
}

// compile builds (or fetches) the graph for the given input shapes and
// values of the integer inputs (nil in Open's trial build: nodes that
// depend on them are not built). With targets nil only the forward model
// is built (shape checks, Outputs).
func (md *Model) compile(shapes map[string][]int, ints map[string]*importer.Tensor, targets map[string][]int) (*compiled, error) {
	key := signature(shapes) + intSignature(ints)
	withLoss := targets != nil
	if withLoss && len(md.tasks) == 0 {
		return nil, errors.New("no tasks: the model was opened for Outputs only")
	}
	if withLoss {
		key += "|" + signature(targets)
	}
	if c, ok := md.cache[key]; ok {
		return c, nil
	}
	trainable := map[string]bool{}
	for _, p := range md.params {
		trainable[p.Name] = true
	}
	bt, err := graph.BuildInts(md.m.Proto.Graph, md.opset, md.dt, shapes, md.static, ints, md.inits, trainable, md.paramView, md.opt.BatchNorm == "train", md.opt.build)
	if err != nil {
		return nil, err
	}
	c := &compiled{bt: bt, stats: md.stats}
	for i, t := range md.tasks {
		if v := bt.Vals[t.Output]; (v == nil && len(bt.B.Deferred) == 0) || v.IsConst() {
			return nil, fmt.Errorf("%s %q: output %q is not computed at run time from the inputs and weights", md.kind(i), t.Name, t.Output)
		}
		if v := bt.Vals[t.Output]; v != nil && v.Seq != nil {
			return nil, fmt.Errorf("%s %q: output %q is a tensor sequence, expected a tensor", md.kind(i), t.Name, t.Output)
		}
	}
	if !withLoss {
		md.cache[key] = c
		return c, nil
	}
	if err := md.addLosses(c, targets); err != nil {
		return nil, err
	}
	md.cache[key] = c
	return c, nil
}

// ReleaseBuffers drops the buffers the model keeps for its next step (the
// pool of dead activation and gradient buffers, which holds about the
// planned activations, MemoryEstimate.Values, after a step), so that the
// garbage collector can return them to the system or to work that is not
// a step, such as saving. The next Evaluate or Outputs allocates them
// again.
func (md *Model) ReleaseBuffers() {
	if md.pool != nil {
		md.pool.drop()
	}
}

// paramView is the value a parameter node of a new graph starts with: in
// float32 mode a tensor backed by the parameter's slice of θ (what
// Evaluate and Outputs bind anyway, bindParam), so that building a graph
// copies no parameters; nil otherwise (the graph then holds a copy of the
// initializer).
func (md *Model) paramView(name string) G.Value {
	if md.dt != tensor.Float32 {
		return nil
	}
	i, ok := md.paramIdx[name]
	if !ok || len(md.params[i].Shape) == 0 {
		return nil
	}
	p := md.params[i]
	v := md.theta[p.Offset : p.Offset+shape.Numel(p.Shape)]
	return tensor.New(tensor.WithShape(append([]int{}, p.Shape...)...), tensor.WithBacking(v[:len(v):len(v)]))
}

// bufPool returns the pool of dead buffers every program of md draws from:
// the programs run one at a time (a Model is not safe for concurrent use;
// only the backward passes of one Evaluate may run side by side, and the
// pool locks) and release their values when a call ends, so one pool
// serves Evaluate's and Outputs' graphs instead of each keeping its own.
func (md *Model) bufPool() *bufPool {
	if md.pool == nil {
		md.pool = &bufPool{}
	}
	return md.pool
}

// checkInputSize refuses a graph input whose shape s (its declared shape,
// dynamic dimensions filled in) holds more than importer.MaxElements
// elements or takes more than opt.MaxBytes.
func checkInputSize(in Input, s []int, opt Options) error {
	n := big.NewInt(1)
	for _, d := range s {
		n.Mul(n, big.NewInt(int64(d)))
	}
	bytes := new(big.Int).Mul(n, big.NewInt(4))
	switch {
	case opt.MaxBytes > 0 && bytes.Cmp(big.NewInt(opt.MaxBytes)) > 0:
		return fmt.Errorf("model input %q has shape %s: %s elements take %s, more than the %s allowed (%s)", in.Name, fmtShape(in.Shape), n, FormatBytes(bytes.Int64()), FormatBytes(opt.MaxBytes), opt.MaxBytesFrom)
	case n.Cmp(big.NewInt(importer.MaxElements)) > 0:
		return fmt.Errorf("model input %q has shape %s: %s elements, more than the %d a tensor may hold", in.Name, fmtShape(in.Shape), n, int64(importer.MaxElements))
	}
	return nil
}

// fmtShape writes a declared shape, dynamic dimensions as "N".
func fmtShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
		if d < 0 {
			parts[i] = "N"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// graphOutputs lists the graph's outputs, comma-separated, for errors.
func graphOutputs(gp *onnxpb.GraphProto) string {
	names := make([]string, 0, len(gp.Output))
	for _, o := range gp.Output {
		names = append(names, o.GetName())
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(termsafe.Names(names), ", ")
}

// arrayNames lists the arrays of batch, sorted and comma-separated, for
// errors.
func arrayNames(batch map[string]*importer.Tensor) string {
	names := make([]string, 0, len(batch))
	for k := range batch {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(termsafe.Names(names), ", ")
}
