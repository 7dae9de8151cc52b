package job

import (
	"errors"
	"fmt"
	"github.com/paretonav/paretonav/internal/atomicfile"
	"os"
	"path/filepath"
	"strings"

	"github.com/paretonav/paretonav/finetune"
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
}

// destFile is one path and the flag that names it.
type destFile struct {
	flag, path string
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
	dir := filepath.Dir(abs)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && d.MakeFolders:
		return d.checkParent(o, abs)
	case errors.Is(err, os.ErrNotExist):
		return fail("folder %s does not exist (create it first)", filepath.Dir(o.path))
	case err != nil:
		return fail("folder %s: %v", filepath.Dir(o.path), err)
	case !st.IsDir():
		return fail("%s is not a folder", filepath.Dir(o.path))
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail("folder %s: %v", filepath.Dir(o.path), err)
	}
	resolved := filepath.Join(rdir, filepath.Base(abs))
	for _, in := range d.inputs {
		if same, _ := SamePath(in.path, o.path); same || sameResolved(in.path, resolved) {
			return fail("that is the input %s %s; paretonav never overwrites an input (choose another path)", in.flag, in.path)
		}
	}
	if fi, err := os.Stat(abs); err == nil {
		if !fi.Mode().IsRegular() {
			return fail("is a %s, not a file; give a file path", atomicfile.Kind(fi.Mode()))
		}
		if !d.Force && !o.mayExist {
			return fail("file exists (use --force to replace it)")
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			resolved = r
		}
	} else if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fail("is a link to a missing file; give a file path")
	}
	if err := probeFolder(dir); err != nil {
		return fail("cannot create files in folder %s: %v", filepath.Dir(o.path), err)
	}
	return resolved, nil
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

// probeFolder creates and removes a file in dir: the one sure test that
// the job's temporary files can be made there (permissions, read-only
// mounts, access lists).
func probeFolder(dir string) error {
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
