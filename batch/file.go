package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/paretonav/paretonav/internal/smallfile"
)

// Kinds of job.
const (
	KindTune  = "tune"
	KindFront = "front"
	KindEval  = "eval"
)

// Job is one job of a batch, as the jobs file gives it.
type Job struct {
	// Index is the job's position in the expanded list (job k belongs to
	// shard k mod N).
	Index int `json:"index"`
	// ID is Name and a short hash of Kind and Keys: the same file always
	// gives the same IDs, and the job's folder is named by it.
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Keys are the job's settings (defaults, then the job, then its
	// matrix values), each a flag of the command Kind names with its
	// values as a command line would give them.
	Keys map[string][]string `json:"keys"`
	// Where says where in the file the job comes from, for errors.
	Where string `json:"where"`
}

// fileDoc is the jobs file.
type fileDoc struct {
	Defaults map[string]any   `yaml:"defaults"`
	Jobs     []map[string]any `yaml:"jobs"`
}

// MaxFileBytes bounds a jobs file: MaxJobs jobs written out one by one,
// a few hundred bytes each, fit; a larger file (a data file, /dev/zero) is
// refused before it is read rather than filling memory.
const MaxFileBytes = 16 << 20

// LoadFile reads and expands the jobs file at path: a regular file of at
// most MaxFileBytes (smallfile.Read), else an error naming it and the
// limit before it is read.
func LoadFile(path string) ([]Job, error) {
	raw, err := smallfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("jobs file: %w", err)
	}
	jobs, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// Parse reads a jobs file: defaults (any key of the job's command, and
// matrix), jobs (each overriding the defaults, with kind, name and
// matrix), expanded in file order, each job's matrix (its own keys over
// the defaults') into the cross product of its lists, the keys in sorted
// order and the last varying fastest. Without jobs, the defaults are the
// one job.
func Parse(raw []byte) ([]Job, error) {
	var top map[string]any
	if err := yaml.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("jobs file: %w", err)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "defaults" && k != "jobs" {
			return nil, fmt.Errorf("jobs file: key %q: the top level has only defaults: (a mapping) and jobs: (a list)", k)
		}
	}
	var doc fileDoc
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("jobs file: %w (want defaults: a mapping of keys to values; jobs: a list of such mappings)", err)
	}
	entries := doc.Jobs
	if len(entries) == 0 {
		entries = []map[string]any{{}}
	}
	defKeys, defMatrix, err := splitEntry(doc.Defaults, "defaults")
	if err != nil {
		return nil, err
	}
	var out []Job
	seen := map[string]seenJob{}
	for i, e := range entries {
		where := fmt.Sprintf("jobs[%d]", i)
		if len(doc.Jobs) == 0 {
			where = "defaults"
		}
		keys, matrix, err := splitEntry(e, where)
		if err != nil {
			return nil, err
		}
		merged := map[string][]string{}
		for k, v := range defKeys {
			merged[k] = v
		}
		for k, v := range keys {
			merged[k] = v
		}
		m := map[string][][]string{}
		for k, v := range defMatrix {
			m[k] = v
		}
		for k, v := range matrix {
			m[k] = v
		}
		kind := KindTune
		if v, ok := merged["kind"]; ok {
			kind = strings.Join(v, ",")
			delete(merged, "kind")
		}
		if kind != KindTune && kind != KindFront && kind != KindEval {
			return nil, fmt.Errorf("%s: key kind: %q, want tune, front or eval", where, kind)
		}
		if _, ok := m["kind"]; ok {
			return nil, fmt.Errorf("%s: key matrix: kind cannot vary in a matrix (write one job per kind)", where)
		}
		name := kind
		v, explicitName := merged["name"]
		if explicitName {
			name = strings.Join(v, ",")
			delete(merged, "name")
		}
		if _, ok := m["name"]; ok {
			return nil, fmt.Errorf("%s: key matrix: name cannot vary in a matrix", where)
		}
		if err := checkMatrixSize(m, len(out), where); err != nil {
			return nil, err
		}
		for _, combo := range crossProduct(m) {
			j := Job{Index: len(out), Name: name, Kind: kind, Keys: map[string][]string{}, Where: where}
			for k, v := range merged {
				j.Keys[k] = v
			}
			var label []string
			for _, kv := range combo {
				j.Keys[kv.key] = kv.values
				label = append(label, kv.key+"="+strings.Join(kv.values, ","))
			}
			if len(combo) > 0 {
				j.Where = fmt.Sprintf("%s (matrix %s)", where, strings.Join(label, " "))
				if !explicitName {
					j.Name = kind + "-" + strings.Join(label, "-")
				}
			}
			id, canon := jobID(j)
			j.ID = id
			if prev, dup := seen[id]; dup {
				if prev.canon != canon {
					return nil, fmt.Errorf("%s and %s differ but share the ID %s (a SHA-256 prefix collision): rename one", prev.where, j.Where, id)
				}
				return nil, fmt.Errorf("%s and %s are the same job (ID %s): remove one", prev.where, j.Where, id)
			}
			seen[id] = seenJob{j.Where, canon}
			out = append(out, j)
		}
	}
	return out, nil
}

// splitEntry renders an entry's keys as flag values and its matrix as
// lists of them.
func splitEntry(e map[string]any, where string) (map[string][]string, map[string][][]string, error) {
	keys := map[string][]string{}
	matrix := map[string][][]string{}
	for k, v := range e {
		if k == "matrix" {
			mm, ok := v.(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("%s: key matrix: want a mapping of keys to lists, got %T", where, v)
			}
			for mk, mv := range mm {
				list, ok := mv.([]any)
				if !ok || len(list) == 0 {
					return nil, nil, fmt.Errorf("%s: key matrix.%s: want a non-empty list of values", where, mk)
				}
				for i, item := range list {
					vals, err := values(item)
					if err != nil {
						return nil, nil, fmt.Errorf("%s: key matrix.%s, item %d: %w", where, mk, i+1, err)
					}
					matrix[mk] = append(matrix[mk], vals)
				}
			}
			continue
		}
		vals, err := values(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: key %s: %w", where, k, err)
		}
		keys[k] = vals
	}
	return keys, matrix, nil
}

// values renders a YAML value as a flag's values: a scalar is one, a list
// of scalars one each.
func values(v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, fmt.Errorf("no value")
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i+1, err)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		s, err := scalar(x)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
}

func scalar(v any) (string, error) {
	switch v.(type) {
	case nil:
		return "", fmt.Errorf("no value")
	case map[string]any, []any:
		return "", fmt.Errorf("want a number, string or boolean, got a %T", v)
	}
	return fmt.Sprint(v), nil
}

// keyValues is one matrix key's value in one combination.
type keyValues struct {
	key    string
	values []string
}

// MaxJobs bounds the jobs one file expands to: a matrix's cross product
// grows as the product of its lists' lengths, and a short file could
// otherwise ask for more jobs than memory holds.
const MaxJobs = 10000

// checkMatrixSize returns an error naming m's keys, their counts and the
// product when the jobs so far (before) plus m's combinations exceed
// MaxJobs. It computes the product without expanding it.
func checkMatrixSize(m map[string][][]string, before int, where string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := big.NewInt(1)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d values)", k, len(m[k]))
		n.Mul(n, big.NewInt(int64(len(m[k]))))
	}
	if n.Cmp(big.NewInt(int64(MaxJobs-before))) <= 0 {
		return nil
	}
	return fmt.Errorf("%s: key matrix: %s make %s jobs; with the %d before them that is more than the %d a jobs file may expand to: split the file or shorten the lists",
		where, strings.Join(parts, " × "), n, before, MaxJobs)
}

// crossProduct lists every combination of m's values, keys in sorted
// order, the last key varying fastest; an empty m gives one empty
// combination.
func crossProduct(m map[string][][]string) [][]keyValues {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := [][]keyValues{nil}
	for _, k := range keys {
		var next [][]keyValues
		for _, prefix := range out {
			for _, v := range m[k] {
				next = append(next, append(slices.Clone(prefix), keyValues{k, v}))
			}
		}
		out = next
	}
	return out
}

// seenJob is what LoadFile remembers of a job to tell a repeated job
// from two jobs whose IDs collide.
type seenJob struct {
	where string
	canon string // the job's kind and keys as hashed
}

// jobID is the job's name made safe for a folder name, and the first 16
// hex digits of the SHA-256 of its kind and keys (JSON, keys sorted); it
// also returns that JSON. Sixty-four bits keep a collision among
// MaxJobs jobs of one name below one in 10^11; thirty-two bits (eight
// digits) collided about once in a hundred files of that size.
func jobID(j Job) (id, canon string) {
	b, _ := json.Marshal(struct {
		Kind string              `json:"kind"`
		Keys map[string][]string `json:"keys"`
	}{j.Kind, j.Keys}) // encoding/json sorts map keys
	sum := sha256.Sum256(b)
	return slug(j.Name) + "-" + hex.EncodeToString(sum[:8]), string(b)
}

// slug keeps letters, digits, '.', '_' and '-' of s, replaces the rest by
// '_' and caps the length at 48 bytes.
func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > 48 {
		b = b[:48]
	}
	if len(b) == 0 {
		return "job"
	}
	return string(b)
}
