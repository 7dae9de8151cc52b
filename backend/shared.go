package backend

import (
	"github.com/paretonav/paretonav/importer"
)

// Tied parameters: trainable initializers read by more than one node
// (PyTorch's export merges equal-valued initializers, such as zero
// biases). Open records them; with Options.Untie it first gives every
// consumer but the first its own copy, so that they train independently.

// findShared fills md.shared with the trainable initializers read by
// several nodes, untying them first when md.opt.Untie (and then choosing
// the trainable initializers again, copies included).
func (md *Model) findShared() error {
	trainable := map[string]bool{}
	for _, p := range md.params {
		trainable[p.Name] = true
	}
	md.shared = nil
	for _, s := range md.m.SharedInitializers() {
		if trainable[s.Name] {
			md.shared = append(md.shared, s)
		}
	}
	if !md.opt.Untie || len(md.shared) == 0 {
		return nil
	}
	names := make([]string, len(md.shared))
	for i, s := range md.shared {
		names[i] = s.Name
	}
	untied, err := md.m.Untie(names)
	if err != nil {
		return err
	}
	inits, err := md.m.Initializers()
	if err != nil {
		return err
	}
	md.inits, md.untied, md.shared = inits, untied, nil
	md.params, md.theta = nil, nil
	md.chooseParams()
	return nil
}

// SharedInitializers returns the trainable initializers that more than
// one node reads, which training ties together (none after
// Options.Untie), in initializer order.
func (md *Model) SharedInitializers() []importer.Shared {
	return append([]importer.Shared(nil), md.shared...)
}

// Untied returns the copies Options.Untie made, by initializer.
func (md *Model) Untied() map[string][]string { return md.untied }
