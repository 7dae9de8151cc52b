package cli

import "strings"

// lines is a repeatable flag's value that keeps each occurrence whole:
// an #SBATCH line such as --mail-type=END,FAIL holds commas that a
// StringSliceFlag would cut into two lines.
type lines []string

// Set appends one occurrence.
func (l *lines) Set(v string) error { *l = append(*l, v); return nil }

// String joins the occurrences, one a line.
func (l *lines) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, "\n")
}
