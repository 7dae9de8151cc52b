package job

import (
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
}

// NewLoader returns an empty Loader.
func NewLoader() *Loader {
	return &Loader{models: map[string]*importer.Model{}, arrays: map[string]map[string]*importer.Tensor{}}
}

// Model returns the ONNX model at path: parsed once, then a private deep
// copy of its graph for each call, so that jobs on different goroutines
// share no tensors.
func (l *Loader) Model(path string) (*importer.Model, error) {
	if l == nil {
		return importer.Load(path)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.models[path]
	if !ok {
		var err error
		if m, err = importer.Load(path); err != nil {
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
	if l == nil {
		return finetune.LoadArrays(specs)
	}
	key := strings.Join(specs, "\x00")
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.arrays[key]; ok {
		return a, nil
	}
	a, err := finetune.LoadArrays(specs)
	if err != nil {
		return nil, err
	}
	l.arrays[key] = a
	return a, nil
}
