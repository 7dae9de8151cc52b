package job

import (
	"errors"
	"fmt"
	"github.com/paretonav/paretonav/internal/atomicfile"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

// Destinations collects the files a job reads and the files it will
// write, and checks the latter before any work (Check): every path a job
// writes is distinct from the others and from every input (compared after
// resolving links, and as the same file where it exists), its folder
// exists and takes new files, an existing file is replaced only with
// Force and never when it is an input, and it is not a folder or a device.
type Destinations struct {
	// Force lets existing files be replaced (never an input).
	Force bool
	// MakeFolders accepts a missing folder whose closest existing parent
	// takes new files: the caller creates it before the job runs (a
	// batch job's folder).
	MakeFolders bool
	inputs      []destFile
	outputs     []destFile
	// modelPending: a model input is not open yet, so its external data
	// files are unknown; an existing file that is not a model may be one
	// of them, which the check once the model is open names as such.
	modelPending bool
}

// destFile is one path and the flag that names it.
type destFile struct {
	flag, path string
	// model: the file is an ONNX model; an existing one is replaced
	// (with Force) only when it is a model too, never a model's data
	// file or anything else.
	model bool
	// mayExist: an existing file is the job's own (a resumed run's log or
	// checkpoint) and is continued or replaced without Force.
	mayExist bool
}

// Input records a file the job reads; what names it in errors ("model",
// "--data file").
func (d *Destinations) Input(what, path string) {
	if path != "" {
		d.inputs = append(d.inputs, destFile{flag: what, path: path})
	}
}

// Sources records the files of data source specs (finetune.ParseSource)
// given with flag as inputs.
func (d *Destinations) Sources(flag string, specs []string) {
	for _, spec := range specs {
		if s, err := finetune.ParseSource(spec); err == nil {
			d.Input(flag+" file", s.Path)
		}
	}
}

// Output records a file the job will write.
func (d *Destinations) Output(flag, path string) {
	if path != "" {
		d.outputs = append(d.outputs, destFile{flag: flag, path: path})
	}
}

// Model records an ONNX model the job will write: an existing file there
// is replaced (with Force) only when it is a model itself.
func (d *Destinations) Model(flag, path string) {
	if path != "" {
		d.outputs = append(d.outputs, destFile{flag: flag, path: path, model: true})
	}
}

// ModelInput records a model the job reads, with the external data files
// it names (m.DataFiles); m may be nil when it is not open yet.
func (d *Destinations) ModelInput(what, path string, m *importer.Model) {
	d.Input(what, path)
	d.modelPending = d.modelPending || m == nil
	if m != nil {
		for _, f := range m.DataFiles() {
			d.Input(what+"'s external data file", f)
		}
	}
}

// ModelOutput records the model the job writes from m at path and, when
// m keeps weights in external data (which the written model keeps too),
// the data file written beside it.
func (d *Destinations) ModelOutput(flag, path string, m *importer.Model) {
	d.Model(flag, path)
	if path != "" && m != nil && len(m.DataFiles()) > 0 {
		d.Output(flag+" data file", filepath.Join(rawDir(path), importer.DataFileName(path)))
	}
}

// Own records a file the job will write that may already exist as the
// job's own (a resumed run's log, or the checkpoint it continues): it is
// replaced without Force, but still never when it is an input.
func (d *Destinations) Own(flag, path string) {
	if path != "" {
		d.outputs = append(d.outputs, destFile{flag: flag, path: path, mayExist: true})
	}
}

// Check returns every problem with the outputs, joined, or nil.
func (d *Destinations) Check() error {
	var errs []error
	resolved := make([]string, len(d.outputs))
	for i, o := range d.outputs {
		r, err := d.checkOutput(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resolved[i] = r
		for j, p := range d.outputs[:i] {
			if resolved[j] != "" && resolved[j] == r {
				errs = append(errs, fmt.Errorf("%s %s: %s names the same file; give each output its own path", o.flag, o.path, p.flag))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// checkOutput checks one output and returns its resolved path.
func (d *Destinations) checkOutput(o destFile) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%s %s: %s", o.flag, o.path, fmt.Sprintf(format, args...))
	}
	if strings.HasSuffix(o.path, string(filepath.Separator)) {
		return fail("names a folder; give a file name")
	}
	abs, err := filepath.Abs(o.path)
	if err != nil {
		return fail("%v", err)
	}
	// The folder as the system will walk it: "nosub/../o.onnx" needs
	// nosub, and "link/../o.onnx" is beside link's target, not beside
	// link (filepath.Abs would clean both away).
	dir := rawDir(o.path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && d.MakeFolders && !strings.Contains(o.path, ".."):
		return d.checkParent(o, abs)
	case errors.Is(err, os.ErrNotExist):
		return fail("folder %s does not exist (create it first)", dir)
	case err != nil:
		return fail("folder %s: %v", dir, err)
	case !st.IsDir():
		return fail("%s is not a folder", dir)
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err == nil {
		rdir, err = filepath.Abs(rdir)
	}
	if err != nil {
		return fail("folder %s: %v", dir, err)
	}
	resolved := filepath.Join(rdir, filepath.Base(o.path))
	if li, err := os.Lstat(resolved); err == nil && li.Mode()&os.ModeSymlink == 0 && !li.Mode().IsRegular() {
		return fail("is a %s, not a file; give a file path", atomicfile.Kind(li.Mode()))
	}
	// Writing goes through a link to the file it names (the file checked
	// from here on); links into /dev or /proc and links to nothing are
	// refused.
	if resolved, err = atomicfile.Target(resolved); err != nil {
		return fail("%v", err)
	}
	for _, in := range d.inputs {
		if same, _ := SamePath(in.path, resolved); same || sameResolved(in.path, resolved) {
			return fail("that is the input %s %s; paretonav never overwrites an input (choose another path)", in.flag, in.path)
		}
	}
	if _, err := os.Stat(resolved); err == nil {
		if !d.Force && !o.mayExist {
			return fail("file exists (use --force to replace it)")
		}
		if o.model && !o.mayExist && !d.modelPending && !importer.LooksLikeModel(resolved) {
			return fail("exists and is not an ONNX model (its first bytes are not a model's); --force replaces only a model: remove the file yourself if you mean to")
		}
		if why := unreplaceable(resolved); why != "" {
			return fail("cannot be replaced: %s", why)
		}
	}
	if err := probeFolder(filepath.Dir(resolved)); err != nil {
		return fail("cannot create files in folder %s: %v", filepath.Dir(resolved), err)
	}
	return resolved, nil
}

// rawDir returns the folder part of p as written, without cleaning it
// (".." stays, to be walked by the system): "." when p has none.
func rawDir(p string) string {
	i := strings.LastIndex(p, string(filepath.Separator))
	switch {
	case i < 0:
		return "."
	case i == 0:
		return string(filepath.Separator)
	}
	return p[:i]
}

// checkParent checks an output whose folder the caller will create: the
// closest existing parent must be a folder that takes new files.
func (d *Destinations) checkParent(o destFile, abs string) (string, error) {
	p := filepath.Dir(abs)
	for {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return "", fmt.Errorf("%s %s: %s is not a folder", o.flag, o.path, p)
			}
			if err := probeFolder(p); err != nil {
				return "", fmt.Errorf("%s %s: cannot create folders in %s: %v", o.flag, o.path, p, err)
			}
			return abs, nil
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(p) == p {
			return "", fmt.Errorf("%s %s: %v", o.flag, o.path, err)
		}
		p = filepath.Dir(p)
	}
}

// sameResolved reports whether the input at in resolves to resolved.
func sameResolved(in, resolved string) bool {
	r, err := filepath.EvalSymlinks(in)
	if err != nil {
		return false
	}
	r, err = filepath.Abs(r)
	return err == nil && r == resolved
}

// probed holds the folders probeFolder found to take files, with when:
// a batch's jobs share their out folder, and probing it again for each of
// thousands of jobs within moments tells nothing new.
var probed sync.Map

// probeFresh is how long a successful probe of a folder is taken as true.
const probeFresh = 5 * time.Second

// probeFolder creates and removes a file in dir: the one sure test that
// the job's temporary files can be made there (permissions, read-only
// mounts, access lists). A success is remembered for probeFresh.
func probeFolder(dir string) error {
	if at, ok := probed.Load(dir); ok && time.Since(at.(time.Time)) < probeFresh {
		return nil
	}
	if err := probeOnce(dir); err != nil {
		return err
	}
	probed.Store(dir, time.Now())
	return nil
}

// probeOnce is probeFolder without the memory of earlier probes.
func probeOnce(dir string) error {
	f, err := os.CreateTemp(dir, ".paretonav-probe*")
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			return pe.Err
		}
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
