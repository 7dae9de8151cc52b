package job

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
)

// runRecord is what a job stores in its checkpoints
// (finetune.Settings.CheckpointJob): the command, its resolved
// configuration with absolute paths, and the fingerprints of the files it
// read, so that the checkpoint alone continues the run on the same inputs.
type runRecord struct {
	Command string          `json:"command"`
	Config  json.RawMessage `json:"config"`
	Inputs  []fileSum       `json:"inputs"`
}

// fileSum identifies an input's content: its size and SHA-256. For a
// folder (Dir; a folder data source) they are the total size of its
// files and the SHA-256 of their names and SHA-256s (sumDir).
type fileSum struct {
	Flag   string `json:"flag"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Dir    bool   `json:"dir,omitempty"`
}

// sumKey identifies a file's content without reading it: the file (its
// device and inode), size and modification time. A file rewritten in
// place changes its modification time.
type sumKey struct {
	path  string
	size  int64
	mtime int64
	ino   uint64
}

// sums holds the fingerprints already taken in this process, by sumKey:
// a batch's jobs read the same model and data, and hashing them once per
// job made checking a jobs file grow with jobs × data size.
var sums sync.Map

// sumFile fingerprints the file at path.
func sumFile(flag, path string) (fileSum, error) {
	// Stat first: hashing a device (/dev/zero) never ends, and opening a
	// FIFO waits for a writer.
	st, err := os.Stat(path)
	if err != nil {
		return fileSum{}, fmt.Errorf("%s: %w", flag, err)
	} else if !st.Mode().IsRegular() {
		return fileSum{}, fmt.Errorf("%s %s is not a regular file (mode %s)", flag, path, st.Mode().Type())
	}
	key := sumKey{path: path, size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		key.ino = sys.Ino
	}
	if s, ok := sums.Load(key); ok {
		sum := s.(fileSum)
		sum.Flag = flag
		return sum, nil
	}
	sum, err := hashFile(flag, path)
	if err == nil && sum.Size == key.size {
		sums.Store(key, sum)
	}
	return sum, err
}

// sumDir fingerprints the folder at path: every regular file under it
// (hidden ones aside), by its path relative to the folder, sorted.
func sumDir(flag, path string) (fileSum, error) {
	var files []string
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fileSum{}, fmt.Errorf("%s: %w", flag, err)
	}
	h := sha256.New()
	out := fileSum{Flag: flag, Path: path, Dir: true}
	for _, p := range files { // WalkDir walks in lexical order
		s, err := sumFile(flag, p)
		if err != nil {
			return fileSum{}, err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s\x00%s\n", rel, s.SHA256)
		out.Size += s.Size
	}
	out.SHA256 = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// hashFile reads the file at path whole and returns its size and SHA-256.
func hashFile(flag, path string) (fileSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileSum{}, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileSum{}, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return fileSum{Flag: flag, Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// sumInputs fingerprints the model and data files of a tune job.
func (c *TuneConfig) sumInputs() ([]fileSum, error) {
	var out []fileSum
	add := func(flag, path string) error {
		s, err := sumFile(flag, path)
		out = append(out, s)
		return err
	}
	if err := add("MODEL", c.Model); err != nil {
		return nil, err
	}
	for _, src := range []struct {
		flag  string
		specs []string
	}{{"--data", c.Data}, {"--val", c.Val}} {
		var err error
		if out, err = sumSources(out, src.flag, src.specs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkInputs refuses inputs whose content changed since want was taken.
func checkInputs(want []fileSum) error {
	var errs []error
	for _, w := range want {
		sum := sumFile
		if w.Dir {
			sum = sumDir
		}
		got, err := sum(w.Flag, w.Path)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w (the interrupted run read it)", err))
		case got.Size != w.Size:
			errs = append(errs, fmt.Errorf("%s %s: %d bytes, the interrupted run read %d; a resumed run needs the same files", w.Flag, w.Path, got.Size, w.Size))
		case got.SHA256 != w.SHA256:
			errs = append(errs, fmt.Errorf("%s %s: its content changed since the interrupted run read it (SHA-256 %.12s…, was %.12s…); a resumed run needs the same files", w.Flag, w.Path, got.SHA256, w.SHA256))
		}
	}
	return errors.Join(errs...)
}

// absPath returns p made absolute ("" stays "").
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// absSources makes the files of data source specs absolute.
func absSources(specs []string) []string {
	if len(specs) == 0 {
		return nil
	}
	out := make([]string, len(specs))
	for i, spec := range specs {
		s, err := finetune.ParseSource(spec)
		if err != nil {
			out[i] = spec
			continue
		}
		out[i] = s.WithPath(absPath(s.Path))
	}
	return out
}

// flagFields walks the flag-tagged fields of the struct v points to
// (embedded and nested structs included).
func flagFields(v reflect.Value, f func(name string, opts string, field reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		sf, fv := t.Field(i), v.Field(i)
		tag, ok := sf.Tag.Lookup("flag")
		if !ok {
			if sf.Type.Kind() == reflect.Struct {
				flagFields(fv, f)
			}
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f(name, opts, fv)
	}
}

// normalizeField makes the paths of a tagged field absolute.
func normalizeField(opts string, v reflect.Value) {
	switch {
	case opts == "path" || strings.HasPrefix(opts, "path,"):
		v.SetString(absPath(v.String()))
	case strings.Contains(opts, "sources"):
		v.Set(reflect.ValueOf(absSources(v.Interface().([]string))))
	case strings.Contains(opts, "pathlist"):
		if v.String() != "" {
			parts := strings.Split(v.String(), ",")
			for i, p := range parts {
				parts[i] = absPath(strings.TrimSpace(p))
			}
			v.SetString(strings.Join(parts, ","))
		}
	case strings.Contains(opts, "paths"):
		ps := v.Interface().([]string)
		if len(ps) > 0 {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = absPath(p)
			}
			v.Set(reflect.ValueOf(out))
		}
	}
}

// showValue prints a field's value for an error.
func showValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "(the default)"
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		if len(parts) == 0 {
			return "(none)"
		}
		return strings.Join(parts, ",")
	}
	if v.Kind() == reflect.String && v.String() == "" {
		return `""`
	}
	return fmt.Sprint(v.Interface())
}

// sameValue compares two field values, an empty slice equal to none.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Slice && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// withDefaults returns c with the defaults Prepare takes filled in
// (defaulted) and its paths absolute: the configuration a checkpoint
// stores.
func (c *TuneConfig) withDefaults() *TuneConfig {
	r := c.defaulted()
	flagFields(reflect.ValueOf(r).Elem(), func(_, opts string, v reflect.Value) { normalizeField(opts, v) })
	return r
}

// defaulted returns a copy of c with the defaults of tune filled in: the
// learning rate, the output (MODEL_tuned.onnx) and the checkpoint
// (OUT.ckpt). It is the one place these defaults are taken; Prepare and
// the checkpoint read them from here.
func (c *TuneConfig) defaulted() *TuneConfig {
	r := *c
	if r.LR == 0 {
		r.LR = TuneLR
	}
	if r.Out == "" && r.Model != "" {
		r.Out = strings.TrimSuffix(r.Model, filepath.Ext(r.Model)) + "_tuned.onnx"
	}
	if r.Checkpoint == "" && r.Out != "" {
		r.Checkpoint = r.Out + ".ckpt"
	}
	return &r
}

// resumed returns the configuration of the run saved in c.Resume: the
// checkpoint's, with the flags c.Given repeats checked against it, and its
// inputs checked to be the files the run read. It also returns the
// checkpoint's step.
func (c *TuneConfig) resumed() (*TuneConfig, int, error) {
	saved, step, err := resumeConfig("tune", c.Resume, c.withDefaults(), c.Given)
	if err != nil {
		return nil, 0, err
	}
	saved.Force = c.Force // never the checkpoint's: it is no authority to replace files
	if err := finishedRun(c.Resume, saved.RunID, saved.Out, step); err != nil {
		return nil, 0, err
	}
	saved.Resume, saved.Given, saved.ConfigFile, saved.MakeFolders = c.Resume, nil, c.ConfigFile, c.MakeFolders
	return saved, step, nil
}

// resumeConfig reads the configuration a checkpoint of cmd at path holds
// (runRecord) and compares with it the flag-tagged fields of given (with
// its defaults filled in) that the user set (set; nil: all): one that
// differs is refused by its flag's name, a free one is taken from given,
// the others from the checkpoint. The inputs are checked to be the files
// the run read. It returns the configuration and the checkpoint's step.
func resumeConfig[T any](cmd, path string, given *T, set map[string]bool) (*T, int, error) {
	info, err := finetune.ReadCheckpointInfo(path)
	if err != nil {
		return nil, 0, fmt.Errorf("--resume %s: %w", path, err)
	}
	var rec runRecord
	if err := json.Unmarshal(info.Job, &rec); err != nil || rec.Command == "" {
		return nil, 0, fmt.Errorf("--resume %s: the checkpoint holds no run configuration", path)
	}
	if rec.Command != cmd {
		return nil, 0, fmt.Errorf("--resume %s: a checkpoint of `paretonav %s`; continue it with that command", path, rec.Command)
	}
	saved := new(T)
	if err := json.Unmarshal(rec.Config, saved); err != nil {
		return nil, 0, fmt.Errorf("--resume %s: its configuration: %w", path, err)
	}
	if err := rebaseOutputs(saved, path, set); err != nil {
		return nil, 0, fmt.Errorf("--resume %s: %w", path, err)
	}
	var errs []error
	var fields []reflect.Value
	flagFields(reflect.ValueOf(saved).Elem(), func(_, _ string, v reflect.Value) { fields = append(fields, v) })
	i := 0
	flagFields(reflect.ValueOf(given).Elem(), func(name, opts string, g reflect.Value) {
		s := fields[i]
		i++
		switch {
		case set != nil && !set[name]:
		case strings.Contains(opts, "free"):
			s.Set(g)
		case !sameValue(s, g):
			flag := "--" + name
			if name == "MODEL" {
				flag = name
			}
			errs = append(errs, fmt.Errorf("%s %s differs from the checkpoint's %s; a resumed run keeps its configuration (leave the flag out, or start over with --force)",
				flag, showValue(g), showValue(s)))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, 0, fmt.Errorf("--resume %s: %w", path, err)
	}
	if err := checkInputs(rec.Inputs); err != nil {
		return nil, 0, fmt.Errorf("--resume %s: %w", path, err)
	}
	return saved, info.Step, nil
}

// A checkpoint is no authority on where a run writes: anyone can write
// one (its checksum guards against damage, not against a forger), and a
// checkpoint may be copied elsewhere. So a checkpoint stores the paths a
// run writes (the fields tagged "dest") relative to its own folder, and a
// resumed run writes into the folder the checkpoint is in now: a path
// that leaves it (or an absolute one, from an older checkpoint) is taken
// only when the resuming command line gives that flag itself.

// destFields calls f for each set path of v's fields tagged "dest" (the
// files a run writes), with its flag's name.
func destFields(v any, f func(name string, field reflect.Value)) {
	flagFields(reflect.ValueOf(v).Elem(), func(name, opts string, field reflect.Value) {
		if strings.HasSuffix(opts, ",dest") && field.String() != "" {
			f(name, field)
		}
	})
}

// relOutputs rewrites the dest-tagged paths of v (absolute) relative to
// dir, the folder of the checkpoint that stores them.
func relOutputs(v any, dir string) {
	destFields(v, func(_ string, f reflect.Value) {
		if r, err := filepath.Rel(dir, f.String()); err == nil {
			f.SetString(r)
		}
	})
}

// rebaseOutputs resolves the dest-tagged paths of a configuration read
// from the checkpoint at ckpt against the checkpoint's folder. A path
// outside that folder is refused unless the resuming command line gives
// its flag (set names the flags given; nil: all of them, a batch job's
// configuration, whose file is its own).
func rebaseOutputs(v any, ckpt string, set map[string]bool) error {
	dir, err := filepath.Abs(filepath.Dir(ckpt))
	if err != nil {
		return err
	}
	var errs []error
	destFields(v, func(name string, f reflect.Value) {
		p := f.String()
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		f.SetString(p)
		if set == nil || set[name] {
			return
		}
		if r, err := filepath.Rel(dir, p); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			errs = append(errs, fmt.Errorf("the run wrote --%s %s, outside the checkpoint's folder %s; a resumed run writes outside it only where its own command line says: give --%s %s to continue there, or another path",
				name, p, dir, name, ShellQuote(p)))
		}
	})
	return errors.Join(errs...)
}

// checkpointRecord is what c's checkpoints store (runRecord), with the
// fingerprints of its inputs.
func (c *TuneConfig) checkpointRecord() ([]byte, error) {
	saved := c.withDefaults()
	saved.Resume = ""
	saved.Force = false
	relOutputs(saved, filepath.Dir(saved.Checkpoint))
	cfg, err := json.Marshal(saved)
	if err != nil {
		return nil, err
	}
	sums, err := saved.sumInputs()
	if err != nil {
		return nil, err
	}
	return json.Marshal(runRecord{Command: "tune", Config: cfg, Inputs: sums})
}

// sumAll fingerprints the files flag reads.
func sumAll(out []fileSum, flag string, paths ...string) ([]fileSum, error) {
	for _, p := range paths {
		s, err := sumFile(flag, p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// sumSources fingerprints the files (or folders) of data source specs.
func sumSources(out []fileSum, flag string, specs []string) ([]fileSum, error) {
	for _, spec := range specs {
		s, err := finetune.ParseSource(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		sum := sumFile
		if s.Kind != "" {
			sum = sumDir
		}
		f, err := sum(flag, s.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// freshCheckpoint refuses to start a new run over the checkpoint of
// another at path, unless force.
func freshCheckpoint(cmd, path string, force bool) error {
	if force {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	info, err := finetune.ReadCheckpointInfo(path)
	if err != nil {
		return fmt.Errorf("--checkpoint %s: file exists and is no checkpoint paretonav can continue (%v); pass --force to replace it", path, err)
	}
	return fmt.Errorf("%s holds an interrupted run at step %d; continue with `paretonav %s --resume %s`, or pass --force to start over",
		path, info.Step, cmd, ShellQuote(path))
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newRunID returns a new run's identity: 16 random hex digits.
func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// finishedRun refuses to resume the checkpoint ckpt of run id when the
// model at out says that run already wrote it: the run is over, and
// resuming an old checkpoint of it would silently replace its model and
// rewrite its log.
func finishedRun(ckpt, id, out string, step int) error {
	if id == "" || out == "" {
		return nil
	}
	md, err := importer.ReadMetadata(out)
	if err != nil {
		return nil // no model there (or none of ours): nothing finished
	}
	var rec struct {
		Run   string `json:"run"`
		Steps int    `json:"steps"`
	}
	if json.Unmarshal([]byte(md["paretonav"]), &rec) != nil || rec.Run != id {
		return nil
	}
	return fmt.Errorf("--resume %s: this run already finished: it wrote %s after %d steps (the checkpoint is from step %d); nothing to resume. Start a new run without --resume, or delete the checkpoint",
		ckpt, out, rec.Steps, step)
}
