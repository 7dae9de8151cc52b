package backend

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// freezeSuggestions is how many initializer names an unmatched freeze
// pattern's error shows.
const freezeSuggestions = 5

// checkFreeze returns an error naming every freeze pattern that matches
// none of names (a typo would otherwise train what was meant to stay
// fixed), with the initializer names closest to the first such pattern.
func checkFreeze(globs, names []string) error {
	var unmatched []string
	for _, g := range globs {
		hit := false
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				hit = true
				break
			}
		}
		if !hit {
			unmatched = append(unmatched, fmt.Sprintf("%q", g))
		}
	}
	if len(unmatched) == 0 {
		return nil
	}
	what := "freeze pattern " + unmatched[0] + " matches"
	if len(unmatched) > 1 {
		what = "freeze patterns " + strings.Join(unmatched, ", ") + " match"
	}
	if len(names) == 0 {
		return fmt.Errorf("backend: %s no initializer: the model has none", what)
	}
	first := strings.Trim(unmatched[0], `"`)
	key := strings.NewReplacer("*", "", "?", "", "[", "", "]", "").Replace(first)
	near := append([]string(nil), names...)
	dist := make(map[string]int, len(near))
	for _, n := range near {
		dist[n] = editDistance(key, n)
	}
	sort.SliceStable(near, func(i, j int) bool { return dist[near[i]] < dist[near[j]] })
	shown := near[:min(freezeSuggestions, len(near))]
	return fmt.Errorf("backend: %s no initializer (patterns are path.Match globs over whole names: * stops at '/'); closest of the model's %d initializers: %s (paretonav inspect lists them all)",
		what, len(names), strings.Join(shown, ", "))
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
