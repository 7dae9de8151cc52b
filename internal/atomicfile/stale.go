package atomicfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tempPattern is os.CreateTemp's pattern for target's temporary files:
// "." and target's base name, ".tmp", then the random digits CreateTemp
// puts for the "*".
func tempPattern(target string) string { return "." + filepath.Base(target) + ".tmp*" }

// RemoveStale removes the temporary files that writes to each target
// left behind when their process was killed before renaming them (named
// by tempPattern, beside the file a link target names). The caller makes
// sure no live process is writing them (it holds the job's lock). Empty
// targets are skipped; errors are ignored: a file that stays is only
// clutter.
func RemoveStale(targets ...string) {
	for _, t := range targets {
		if t == "" {
			continue
		}
		if r, err := Target(t); err == nil {
			t = r
		}
		dir := filepath.Dir(t)
		prefix := strings.TrimSuffix(tempPattern(t), "*")
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok || rest == "" || !e.Type().IsRegular() {
				continue
			}
			if _, err := strconv.ParseUint(rest, 10, 64); err == nil {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}
