package cli

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/internal/smallfile"
)

// configFlag is --config FILE.yaml, shared by every command. The file maps
// flag names to values:
//
//	problem: exp2
//	criterion: wd:0.2,0.8
//	steps: 3000
//	init: [0.6, -0.3, -0.3]   # a list: one value per entry of a slice flag, else joined with ","
//
// Flags given on the command line override the file. Relative paths in the
// file (values of path flags and data sources) are relative to the file's
// folder, as in Cargo.toml or docker-compose.yml, so that a project folder
// runs from anywhere; paths on the command line stay relative to the
// current folder.
var configFlag = &ucli.PathFlag{
	Name:     "config",
	Usage:    "read flag values from `FILE.yaml` (keys are flag names; relative paths in it are relative to its folder; command-line flags win; a regular file of at most 4 MiB)",
	Category: "Configuration",
}

// withConfig makes cmd read --config before its action: it adds the flag
// (when missing) and chains applyConfig in front of cmd.Before.
func withConfig(cmd *ucli.Command) *ucli.Command {
	has := false
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			has = has || n == configFlag.Name
		}
	}
	if !has {
		cmd.Flags = append(cmd.Flags, configFlag)
	}
	before := cmd.Before
	cmd.Before = func(c *ucli.Context) error {
		if err := applyConfig(c); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	return cmd
}

// MaxConfigBytes bounds a --config file: flag values take a few KB, so a
// larger file is a mistake (a data file, /dev/zero) and is refused before
// it is read rather than filling memory.
const MaxConfigBytes = 4 << 20

// applyConfig loads the YAML file named by --config (if any) and sets every
// flag of the command that the file names and the command line does not.
// Only a regular file of at most MaxConfigBytes is read (smallfile.Read).
func applyConfig(c *ucli.Context) error {
	path := c.String(configFlag.Name)
	if path == "" {
		return nil
	}
	raw, err := smallfile.Read(path, MaxConfigBytes)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	values, err := parseConfig(raw)
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	return applyValues(c, "--config "+path, filepath.Dir(path), values)
}

// parseConfig reads a YAML mapping of flag names to scalars or lists of
// scalars, each rendered as the strings a flag's Set receives.
func parseConfig(raw []byte) (map[string][]string, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(doc))
	for key, v := range doc {
		switch x := v.(type) {
		case nil:
			return nil, fmt.Errorf("key %q has no value", key)
		case []any:
			for i, e := range x {
				s, err := scalar(e)
				if err != nil {
					return nil, fmt.Errorf("key %q, item %d: %w", key, i+1, err)
				}
				out[key] = append(out[key], s)
			}
		default:
			s, err := scalar(x)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", key, err)
			}
			out[key] = []string{s}
		}
	}
	return out, nil
}

func scalar(v any) (string, error) {
	switch v.(type) {
	case map[string]any, []any:
		return "", fmt.Errorf("want a number, string or boolean, got a %T", v)
	}
	return fmt.Sprint(v), nil
}

// applyValues sets the flags of c's command named in values that were not
// given on the command line. Unknown names are an error listing the
// command's flags; errors start with where (the file the values come
// from). Relative paths among the values are taken relative to the folder
// base (resolvePaths).
func applyValues(c *ucli.Context, where, base string, values map[string][]string) error {
	flags := map[string]ucli.Flag{}
	var names []string
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			flags[n] = f
		}
		if f.Names()[0] != configFlag.Name {
			names = append(names, f.Names()[0])
		}
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		f, ok := flags[key]
		if key == configFlag.Name {
			return fmt.Errorf("%s: key %q: a configuration file cannot name another one (give --%s on the command line)", where, key, configFlag.Name)
		}
		if !ok {
			sort.Strings(names)
			return fmt.Errorf("%s: key %q is not a flag of %q; flags: %s", where, key, c.Command.Name, strings.Join(names, ", "))
		}
		if isSet(c, f) {
			continue
		}
		vals := resolvePaths(f, values[key], base)
		if !isSliceFlag(f) {
			vals = []string{strings.Join(vals, ",")}
		}
		for _, v := range vals {
			if err := c.Set(f.Names()[0], v); err != nil {
				return fmt.Errorf("%s: key %q: %w", where, key, err)
			}
		}
	}
	return nil
}

// isSet reports whether any of f's names was given on the command line.
func isSet(c *ucli.Context, f ucli.Flag) bool {
	for _, n := range f.Names() {
		if c.IsSet(n) {
			return true
		}
	}
	return false
}

// isSliceFlag reports whether f takes one value per occurrence and keeps
// them all.
func isSliceFlag(f ucli.Flag) bool {
	switch f.(type) {
	case *ucli.StringSliceFlag, *ucli.Float64SliceFlag, *ucli.IntSliceFlag, *ucli.Int64SliceFlag,
		*ucli.UintSliceFlag, *ucli.Uint64SliceFlag:
		return true
	}
	return false
}

// resolvePaths returns vals with every relative path among them joined to
// base: the values of path flags (*ucli.PathFlag), and the files of data
// sources (flags that take files: FILE or NAME=FILE, comma-separated).
// Other flags' values are returned as they are.
func resolvePaths(f ucli.Flag, vals []string, base string) []string {
	if base == "" || base == "." {
		return vals
	}
	out := make([]string, len(vals))
	switch x := f.(type) {
	case *ucli.PathFlag:
		for i, v := range vals {
			out[i] = joinPath(base, v)
		}
	case *ucli.StringSliceFlag:
		if !x.TakesFile {
			return vals
		}
		for i, v := range vals {
			parts := strings.Split(v, ",")
			for k, p := range parts {
				if s, err := finetune.ParseSource(p); err == nil {
					parts[k] = s.WithPath(joinPath(base, s.Path))
				} else {
					parts[k] = joinPath(base, strings.TrimSpace(p))
				}
			}
			out[i] = strings.Join(parts, ",")
		}
	default:
		return vals
	}
	return out
}

// joinPath joins a relative path p to base; absolute and empty paths are
// kept.
func joinPath(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}
