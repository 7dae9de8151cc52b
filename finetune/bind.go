package finetune

import (
	"fmt"
	"sort"
	"strings"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/termsafe"
)

// Use is one array a model needs from a data file: the name the model
// reads it under (a model input, or a task's target array) and the name of
// the array in the file that provides it.
type Use struct {
	// Key is the name in the batches handed to the Problem.
	Key string
	// Array is the name of the array in the data.
	Array string
	// Role says what the array is for, in error messages: `model input
	// "x"`, `target of task "left"`.
	Role string
}

// BindError reports data that do not fit a model: a missing array or two
// arrays with different numbers of examples. Every problem found is
// listed.
type BindError struct {
	File     string   // the data file ("" when not from a file)
	Problems []string // one sentence each, naming the array and its role
}

// Error names the data file and lists every problem, separated by "; ".
func (e *BindError) Error() string {
	where := "data"
	if e.File != "" {
		where = e.File
	}
	return fmt.Sprintf("finetune: %s: %s", where, strings.Join(e.Problems, "; "))
}

// Bind selects from arrays (not copied) the ones uses name, checks that
// each is present and that all share their number of examples, and
// returns them as a Dataset keyed by Use.Key. The first limit examples are
// kept when limit > 0 (sliced in place, in file order). Arrays no Use
// names are left out. Shapes and element types against the model are the
// model's business (backend.Model.CheckBatch); Bind only knows names and
// counts. file names the data in errors.
func Bind(arrays map[string]*importer.Tensor, uses []Use, limit int, file string) (*Dataset, error) {
	return bind(arrays, uses, limit, file, false)
}

// bind is Bind; with headers, arrays hold no values (BindFolder).
func bind(arrays map[string]*importer.Tensor, uses []Use, limit int, file string, headers bool) (*Dataset, error) {
	e := &BindError{File: file}
	available := make([]string, 0, len(arrays))
	for name := range arrays {
		available = append(available, name)
	}
	sort.Strings(available)
	out := map[string]*importer.Tensor{}
	var firstUse *Use
	for i := range uses {
		u := &uses[i]
		a, ok := arrays[u.Array]
		if !ok || a == nil {
			e.Problems = append(e.Problems, fmt.Sprintf("no array %q for %s (arrays: %s)", u.Array, u.Role, strings.Join(termsafe.Names(available), ", ")))
			continue
		}
		if len(a.Shape) == 0 {
			e.Problems = append(e.Problems, fmt.Sprintf("array %q for %s is a scalar; want a first dimension indexing examples", u.Array, u.Role))
			continue
		}
		if !headers && storedLen(a) != a.Len() {
			e.Problems = append(e.Problems, fmt.Sprintf("array %q for %s holds %d values for shape %v", u.Array, u.Role, storedLen(a), a.Shape))
			continue
		}
		if prev, ok := out[u.Key]; ok && prev != a {
			e.Problems = append(e.Problems, fmt.Sprintf("%s and another use both read %q from different arrays", u.Role, u.Key))
			continue
		}
		if firstUse == nil {
			firstUse = u
		} else if n, n0 := a.Shape[0], arrays[firstUse.Array].Shape[0]; n != n0 {
			e.Problems = append(e.Problems, fmt.Sprintf("array %q for %s has %d examples but array %q for %s has %d",
				u.Array, u.Role, n, firstUse.Array, firstUse.Role, n0))
			continue
		}
		out[u.Key] = a
	}
	if len(e.Problems) > 0 {
		return nil, e
	}
	d := &Dataset{Arrays: out}
	if limit > 0 && limit < d.Len() {
		for k, a := range out {
			if headers {
				out[k] = &importer.Tensor{Name: a.Name, Type: a.Type, Shape: append([]int{limit}, a.Shape[1:]...)}
			} else {
				out[k] = prefixRows(a, limit)
			}
		}
	}
	return d, nil
}

// prefixRows returns the first n examples of t, sharing its storage.
func prefixRows(t *importer.Tensor, n int) *importer.Tensor {
	row := 1
	for _, s := range t.Shape[1:] {
		row *= s
	}
	out := &importer.Tensor{Name: t.Name, Type: t.Type, Shape: append([]int{n}, t.Shape[1:]...)}
	switch {
	case t.F32 != nil:
		out.F32 = t.F32[:n*row]
	case t.F64 != nil:
		out.F64 = t.F64[:n*row]
	default:
		out.I64 = t.I64[:n*row]
	}
	return out
}
