package job

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/finetune/front"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/png"
)

// Binding says which data array feeds each model input and task
// target.
type Binding struct {
	// Budget bounds the memory of the arrays Load reads (zero: no bound).
	Budget importer.Budget
	Model  *backend.Model
	Tasks  []backend.Task
	Terms  []backend.Task    // backend.Options.Terms: their targets are read too
	Maps   map[string]string // model input → array
	// Warnings collects, per Load, the arrays converted to the element
	// type that reads them (checkTypes).
	Warnings []string
	// ModelKey names Model's graph (its file and the options it was
	// opened with): with it, a Loader checks a data set once for every job
	// binding it the same way to the same model; "" checks it each time.
	ModelKey string
}

// modelKey is a Binding's ModelKey for the model file path opened with
// opt.
func modelKey(path string, opt backend.Options) string {
	return fmt.Sprintf("%q %+v", path, opt)
}

// checkKey is what Load's checks of specs depend on: the model, the
// binding, the data sources, the limit, the batch size and where the
// budget comes from;
// "" (no caching) without a ModelKey.
func (b *Binding) checkKey(flag string, specs []string, limit, batch int) string {
	if b.ModelKey == "" {
		return ""
	}
	// The budget by where it comes from: the memory a machine has free
	// changes from job to job, and arrays read once stay in the Loader.
	return fmt.Sprintf("%q %q %q %d %d %q %v %v %v", b.ModelKey, flag, specs, limit, batch, b.Budget.From, b.Maps, b.Tasks, b.Terms)
}

// boundArray is one array a Binding reads: how it is bound (the
// finetune.Use: its key in the data set, the array's name, its role in
// messages) and what reads it, a model input or a task's or term's target.
type boundArray struct {
	finetune.Use
	input *backend.Input // the model input it feeds; nil for a target
	task  *backend.Task  // the task or term whose target it is; nil for an input
}

// arrays lists every array b reads, once: the model inputs (by their
// --map names), then the targets of the tasks and terms. Uses, checkTypes
// and checkInputs all walk this list, so an array is named and described
// the same way in each.
func (b Binding) arrays() []boundArray {
	var out []boundArray
	for _, in := range b.Model.Inputs() {
		arr := in.Name
		if a, ok := b.Maps[in.Name]; ok {
			arr = a
		}
		out = append(out, boundArray{Use: finetune.Use{Key: in.Name, Array: arr, Role: fmt.Sprintf("model input %q", in.Name)}, input: &in})
	}
	for i, t := range append(append([]backend.Task(nil), b.Tasks...), b.Terms...) {
		if t.Target == "" {
			continue
		}
		kind := "task"
		if i >= len(b.Tasks) {
			kind = "term"
		}
		out = append(out, boundArray{Use: finetune.Use{Key: t.Target, Array: t.Target, Role: fmt.Sprintf("target of %s %q", kind, t.Name)}, task: &t})
	}
	return out
}

// Uses lists the arrays md needs.
func (b Binding) Uses() []finetune.Use {
	var out []finetune.Use
	for _, a := range b.arrays() {
		out = append(out, a.Use)
	}
	return out
}

// Check validates --map against the model's inputs.
func (b Binding) Check() error {
	names := map[string]bool{}
	var list []string
	for _, in := range b.Model.Inputs() {
		names[in.Name] = true
		list = append(list, in.Name)
	}
	keys := make([]string, 0, len(b.Maps))
	for k := range b.Maps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !names[k] {
			return fmt.Errorf("--map %s=%s: the model has no input %q (inputs: %s)", k, b.Maps[k], k, strings.Join(termsafe.Names(list), ", "))
		}
	}
	return nil
}

// Load reads (through l, which may be nil) the data sources specs given to flag (finetune.LoadArrays:
// NPZ archives, .npy and IDX files, merged), binds them to the model
// (first limit examples when limit > 0) and checks them before any work:
// every array present with one number of examples, model inputs of a
// floating type and of the model's shape, targets of the shape each loss
// needs and class labels in range. Errors name the sources, the array and
// the input or task.
//
// Through a Loader, with a ModelKey, a data set is checked once: later
// jobs binding it the same way get the checked arrays and the warnings
// without the per-batch pass over the data.
func (b *Binding) Load(l *Loader, flag string, specs []string, limit, batch int) (*finetune.Dataset, error) {
	key := b.checkKey(flag, specs, limit, batch)
	if c, ok := l.checkedFor(key); ok {
		b.Warnings = append(b.Warnings, c.warns...)
		return c.ds.Clone(), nil
	}
	ds, warns, err := b.load(l, flag, specs, limit, batch)
	if err != nil {
		return nil, err
	}
	l.noteChecked(key, checkedData{ds: ds.Clone(), warns: warns})
	b.Warnings = append(b.Warnings, warns...)
	return ds, nil
}

// load is Load without the Loader's cache; it returns the warnings.
func (b *Binding) load(l *Loader, flag string, specs []string, limit, batch int) (*finetune.Dataset, []string, error) {
	path := strings.Join(specs, ",")
	src, folder, err := finetune.FolderSource(specs)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	if folder {
		f, err := l.Folder(src)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", flag, err)
		}
		ds, err := finetune.BindFolder(f, b.Uses(), limit, path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", flag, err)
		}
		return b.check(ds, flag, path, batch)
	}
	var want []string
	for _, u := range b.Uses() {
		want = append(want, u.Array)
	}
	arrays, err := l.ArraysWithin(specs, want, b.Budget)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	ds, err := finetune.Bind(arrays, b.Uses(), limit, path)
	if err != nil && want != nil {
		// Bind's error lists the arrays present, the skipped ones too.
		if names, lerr := finetune.ArrayNames(specs); lerr == nil {
			all := maps.Clone(arrays)
			for _, n := range names {
				if all[n] == nil {
					all[n] = &importer.Tensor{Name: n}
				}
			}
			if _, err2 := finetune.Bind(all, b.Uses(), limit, path); err2 != nil {
				err = err2
			}
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	return b.check(ds, flag, path, batch)
}

// check checks ds, bound from path, against the model (types, converting
// them; input shapes; every batch of batch examples) and returns its
// warnings. A FileBacked ds is read a batch at a time.
func (b *Binding) check(ds *finetune.Dataset, flag, path string, batch int) (*finetune.Dataset, []string, error) {
	if ds.Len() == 0 {
		return nil, nil, fmt.Errorf("%s %s: no examples", flag, path)
	}
	warns, err := b.checkTypes(ds, path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	var out []string
	for _, w := range warns {
		out = append(out, flag+": "+w)
	}
	if err := b.checkInputs(ds, path); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	}
	// Target shapes and label ranges: the model checks them per batch;
	// every batch is checked here, before the first step.
	N := ds.Len()
	for i := 0; i < N; i += batch {
		j := min(i+batch, N)
		rows, err := ds.Rows(i, j)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", flag, err)
		}
		if err := b.Model.CheckBatch(rows); err != nil {
			where := ""
			if N > batch {
				where = fmt.Sprintf(" (examples %d..%d)", i, j-1)
			}
			if k, kerr := firstBad(b.Model, ds, i, j); kerr != nil {
				where, err = fmt.Sprintf(" (example %d: %s)", k, strings.Join(ds.ExampleFiles(k), ", ")), kerr
			}
			return nil, nil, fmt.Errorf("%s %s%s: %w", flag, path, where, err)
		}
	}
	return ds, out, nil
}

// firstBad returns the first example of i..j−1 of a FileBacked ds that
// fails the model's checks, and its error (−1, nil for data in memory,
// whose errors name the batch).
func firstBad(md *backend.Model, ds *finetune.Dataset, i, j int) (int, error) {
	if !ds.FileBacked() {
		return -1, nil
	}
	for k := i; k < j; k++ {
		rows, err := ds.Rows(k, k+1)
		if err != nil {
			return k, err
		}
		if err := md.CheckBatch(rows); err != nil {
			return k, err
		}
	}
	return -1, nil
}

// checkInputs checks the shapes of the arrays bound to the model inputs, naming the data array and the input.
func (b Binding) checkInputs(ds *finetune.Dataset, path string) error {
	var errs []error
	for _, u := range b.arrays() {
		in := u.input
		if in == nil || in.Shape == nil {
			continue
		}
		a := ds.Arrays[u.Key]
		ok := len(a.Shape) == len(in.Shape)
		for i := 1; ok && i < len(in.Shape); i++ {
			ok = in.Shape[i] < 0 || in.Shape[i] == a.Shape[i]
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s: array %q for model input %q has shape %v; the model expects %s",
				path, u.Array, in.Name, a.Shape, fmtDims(in.Shape)))
		}
	}
	return errors.Join(errs...)
}

// fmtDims writes a shape with dynamic dimensions as "N".
func fmtDims(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			parts[i] = "N"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// DataEval is the outcome of one pass over a data set.
type DataEval struct {
	Examples int
	Losses   []float64    // per task: batch means weighted by batch size
	Terms    []float64    // per term (backend.Options.Terms): the same means; nil without terms
	Jac      png.Jacobian // the same average of the task gradients (when asked)
	G        float64      // g from png.Gram + png.MinNorm on Jac (when asked)
	Gram     []float64    // K = Jac Jacᵀ (m×m, when asked)
	// Metrics are the tasks' metrics (front.Meter) pooled over the whole
	// pass, by task and metric name; nil when no tasks were given or none
	// has metrics.
	Metrics map[string]map[string]float64
}

// Evaluate runs md over ds in file order, batch examples at a time,
// and averages losses (and, with grad, task gradients) over the batches
// weighted by their sizes. With tasks (md's, in order) it also
// accumulates their metrics over every batch (one more forward pass per
// batch for the outputs).
func Evaluate(md *backend.Model, ds *finetune.Dataset, batch int, grad bool, tasks []backend.Task) (*DataEval, error) {
	m, n := len(md.Tasks()), md.NumParams()
	N := ds.Len()
	res := &DataEval{Examples: N, Losses: make([]float64, m)}
	var meter *front.Meter
	if tasks != nil {
		meter = front.NewMeter(tasks)
	}
	var terms []float64
	if t := len(md.Terms()); t > 0 {
		res.Terms, terms = make([]float64, t), make([]float64, t)
	}
	// J is evaluated per batch and, over several batches, averaged into
	// sum (float32, each addition rounded once).
	var jac png.Jacobian
	var sum []float32
	if grad {
		jac = png.NewJacobian(m, n)
		if N > batch {
			sum = make([]float32, m*n)
		}
	}
	tmp := make([]float64, m)
	for i := 0; i < N; i += batch {
		j := min(i+batch, N)
		w := float64(j-i) / float64(N)
		var jp *png.Jacobian
		if grad {
			jp = &jac
		}
		rows, err := ds.Rows(i, j)
		if err != nil {
			return nil, err
		}
		if terms != nil {
			err = md.EvaluateTerms(rows, tmp, terms, jp, nil)
		} else {
			err = md.Evaluate(rows, tmp, jp)
		}
		if err != nil {
			return nil, fmt.Errorf("examples %d..%d: %w", i, j-1, err)
		}
		if meter != nil {
			if err := meter.Add(md, rows); err != nil {
				return nil, fmt.Errorf("examples %d..%d: metrics: %w", i, j-1, err)
			}
		}
		for t := range tmp {
			res.Losses[t] += w * tmp[t]
		}
		for t := range terms {
			res.Terms[t] += w * terms[t]
		}
		if sum != nil {
			for k, v := range jac.Data {
				sum[k] = float32(float64(sum[k]) + w*float64(v))
			}
		}
	}
	for t, v := range res.Losses {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("task %q: loss is %v", md.Tasks()[t], v)
		}
	}
	for t, v := range res.Terms {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("term %q: value is %v", md.Terms()[t], v)
		}
	}
	if meter != nil && !meter.Empty() {
		res.Metrics = meter.Result()
	}
	if grad {
		if sum != nil {
			copy(jac.Data, sum)
		}
		res.Jac = jac
		K := make([]float64, m*m)
		png.Gram(K, jac, 0)
		_, res.G = png.MinNorm(K, m)
		res.Gram = K
	}
	return res, nil
}
