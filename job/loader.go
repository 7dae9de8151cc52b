package job

import (
	"slices"
	"strings"
	"sync"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

// Loader reads models and data files once and hands every job its own
// copy of a model (jobs train their weights) and the same read-only data
// arrays. A nil *Loader reads every file each time. A Loader is safe for
// concurrent use.
type Loader struct {
	mu     sync.Mutex
	models map[string]*importer.Model
	arrays map[string]map[string]*importer.Tensor
	// checked holds data sets Binding.Load checked in full, by what the
	// checks depend on (Binding.checkKey); dataChecks counts those checks.
	checked    map[string]checkedData
	dataChecks int
	folders    map[string]*finetune.Folder
}

// checkedData is a data set that passed Binding.Load's checks, and the
// warnings they gave.
type checkedData struct {
	ds    *finetune.Dataset
	warns []string
}

// NewLoader returns an empty Loader.
func NewLoader() *Loader {
	return &Loader{models: map[string]*importer.Model{}, arrays: map[string]map[string]*importer.Tensor{}, checked: map[string]checkedData{}, folders: map[string]*finetune.Folder{}}
}

// DataChecks is how many times a data set was bound and checked in full
// (every batch against the model) through l: once per distinct model,
// binding and data, however many jobs share them.
func (l *Loader) DataChecks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dataChecks
}

// checkedFor returns the data set checked under key, if any.
func (l *Loader) checkedFor(key string) (checkedData, bool) {
	if l == nil || key == "" {
		return checkedData{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.checked[key]
	return c, ok
}

// noteChecked counts a full check and, when key is set, keeps its result.
func (l *Loader) noteChecked(key string, c checkedData) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dataChecks++
	if key != "" {
		l.checked[key] = c
	}
}

// Model returns the ONNX model at path: parsed once, then a private deep
// copy of its graph for each call, so that jobs on different goroutines
// share no tensors.
func (l *Loader) Model(path string) (*importer.Model, error) {
	return l.ModelWithin(path, importer.Budget{})
}

// ModelWithin is Model reading the file within b (importer.LoadWithin);
// a model read before is not checked again.
func (l *Loader) ModelWithin(path string, b importer.Budget) (*importer.Model, error) {
	if l == nil {
		return importer.LoadWithin(path, b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.models[path]
	if !ok {
		var err error
		if m, err = importer.LoadWithin(path, b); err != nil {
			return nil, err
		}
		l.models[path] = m
	}
	return m.Clone(), nil
}

// Arrays returns the arrays of the data sources specs
// (finetune.LoadArrays), read once per distinct list of sources. Callers
// must not modify them.
func (l *Loader) Arrays(specs []string) (map[string]*importer.Tensor, error) {
	return l.ArraysWithin(specs, nil, importer.Budget{})
}

// ArraysWithin is Arrays reading only the arrays named in want (all when
// want is nil), within b (finetune.LoadArraysWithin): arrays the caller
// does not need are never decoded, and one that would pass the budget is
// refused from its header. Lists of sources are read once per distinct
// want.
func (l *Loader) ArraysWithin(specs, want []string, b importer.Budget) (map[string]*importer.Tensor, error) {
	opt := finetune.LoadOptions{MaxBytes: b.Bytes, From: b.From}
	if want != nil {
		set := map[string]bool{}
		for _, w := range want {
			set[w] = true
		}
		opt.Want = func(name string) bool { return set[name] }
	}
	if l == nil {
		return finetune.LoadArraysWithin(specs, opt)
	}
	w := slices.Clone(want)
	slices.Sort(w)
	key := strings.Join(specs, "\x00") + "\x01" + strings.Join(w, "\x00")
	if want == nil {
		key = strings.Join(specs, "\x00")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.arrays[key]; ok {
		return a, nil
	}
	a, err := finetune.LoadArraysWithin(specs, opt)
	if err != nil {
		return nil, err
	}
	l.arrays[key] = a
	return a, nil
}

// Folder returns the folder source s opened (finetune.OpenFolder: every
// file's header read and checked), once per distinct spec.
func (l *Loader) Folder(s finetune.Source) (*finetune.Folder, error) {
	if l == nil {
		return finetune.OpenFolder(s)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.folders[s.Spec]; ok {
		return f, nil
	}
	f, err := finetune.OpenFolder(s)
	if err != nil {
		return nil, err
	}
	l.folders[s.Spec] = f
	return f, nil
}
