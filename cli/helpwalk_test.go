package cli

import (
	"regexp"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// goIdent matches a Go qualified identifier (pkg.Name), which has no place
// in text meant for users.
var goIdent = regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]+\b`)

// lowerPlaceholder matches a placeholder in plain lower-case letters
// ("--split train"), which reads as a value.
var lowerPlaceholder = regexp.MustCompile(`^--[a-z-]+ ([a-z]+)(,|$| )`)

// walkCommands calls f on every command and subcommand of the app, with
// its full name.
func walkCommands(cmds []*ucli.Command, prefix string, f func(name string, c *ucli.Command)) {
	for _, c := range cmds {
		name := strings.TrimSpace(prefix + " " + c.Name)
		f(name, c)
		walkCommands(c.Subcommands, name, f)
	}
}

// TestEveryFlagHelp walks every command's flags, as --help and docs/cli.md
// print them: each flag that takes a value names its placeholder (never
// urfave/cli's "value"), gives at most one default, shows no default when
// it is required, and no help text cites a Go identifier; --seed has one
// default in every command.
func TestEveryFlagHelp(t *testing.T) {
	app := NewApp()
	check := func(where, text string) {
		if m := goIdent.FindString(text); m != "" {
			t.Errorf("%s: cites the Go identifier %q: %q", where, m, text)
		}
	}
	flags := 0
	seeds := map[string][]string{} // --seed's default → commands
	walkCommands(app.Commands, "", func(name string, c *ucli.Command) {
		check(name+" (usage)", c.Usage)
		check(name+" (description)", c.Description)
		for _, f := range c.Flags {
			flags++
			line := ucli.FlagStringer(f)
			where := name + " --" + f.Names()[0]
			names, usage, _ := strings.Cut(line, "\t")
			if strings.HasSuffix(names, " value") || strings.Contains(names, " value ") {
				t.Errorf("%s: placeholder \"value\": %q (name it in backquotes in Usage)", where, names)
			} else if m := lowerPlaceholder.FindStringSubmatch(names); m != nil {
				t.Errorf("%s: placeholder %q looks like a value, not a name: %q", where, m[1], names)
			}
			if n := strings.Count(usage, "(default"); n > 1 {
				t.Errorf("%s: %d defaults: %q", where, n, usage)
			}
			if isRequired(f) && strings.Contains(usage, "(default") {
				t.Errorf("%s: required, yet shows a default: %q", where, usage)
			}
			check(where, usage)
			if f.Names()[0] == "seed" {
				d := f.(ucli.DocGenerationFlag).GetDefaultText()
				seeds[d] = append(seeds[d], name)
			}
		}
	})
	if len(seeds) != 1 {
		t.Errorf("--seed has several defaults: %v", seeds)
	}
	if flags < 100 {
		t.Fatalf("walked %d flags: the walk missed commands", flags)
	}
}
