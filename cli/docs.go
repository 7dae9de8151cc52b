package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/job"
)

// docsCommand writes the command-line reference, docs/cli.md and the man
// page docs/paretonav.1, from the application itself, so that the
// reference cannot drift from the flags (TestDocsUpToDate checks the
// committed files).
var docsCommand = &ucli.Command{
	Name:   "docs",
	Usage:  "write the command-line reference (cli.md) and the man page (paretonav.1)",
	Hidden: true,
	Flags: []ucli.Flag{
		&ucli.PathFlag{Name: "out-dir", Value: "docs", Usage: "write cli.md and paretonav.1 to `DIR`"},
	},
	Action: func(c *ucli.Context) error {
		dir := c.Path("out-dir")
		md, man := ReferenceMarkdown(), ReferenceMan()
		for name, text := range map[string]string{"cli.md": md, "paretonav.1": man} {
			if err := job.WriteFile(filepath.Join(dir, name), []byte(text)); err != nil {
				return err
			}
		}
		fmt.Fprintf(c.App.Writer, "wrote %s and %s\n", filepath.Join(dir, "cli.md"), filepath.Join(dir, "paretonav.1"))
		return nil
	},
}

func init() { register(docsCommand) }

// docsRegenerate is the command that rewrites the reference.
const docsRegenerate = "go run . docs --out-dir docs"

// ReferenceMarkdown returns the command-line reference in Markdown: every
// visible command and subcommand with its usage, description and flags
// grouped by category, as --help prints them.
func ReferenceMarkdown() string {
	app := NewApp()
	var b strings.Builder
	fmt.Fprintf(&b, "# paretonav command-line reference\n\n")
	fmt.Fprintf(&b, "<!-- Generated from the program by %q; do not edit. -->\n\n", docsRegenerate)
	fmt.Fprintf(&b, "paretonav %s: %s.\n\n", app.Version, app.Usage)
	fmt.Fprintf(&b, "```\nparetonav [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS...]\n```\n\n")
	fmt.Fprintf(&b, "Every command takes `--help` (`-h`). Flags may come before or after the arguments of\n")
	fmt.Fprintf(&b, "the commands that take files, and `--config FILE.yaml` gives flag values from a file\n")
	fmt.Fprintf(&b, "(relative paths in it are relative to its folder; command-line flags win).\n\n")
	b.WriteString("## Global options\n\n")
	writeFlags(&b, app.Flags, "###")
	b.WriteString("\n## Commands\n\n")
	walkVisible(app.Commands, "paretonav", func(name string, c *ucli.Command) {
		fmt.Fprintf(&b, "- [%s](#%s): %s\n", name, anchor(name), c.Usage)
	})
	walkVisible(app.Commands, "paretonav", func(name string, c *ucli.Command) {
		writeCommand(&b, name, c, "##", true)
	})
	return b.String()
}

// ReferenceMan returns the man page paretonav(1): the reference's text
// under the man page's sections.
func ReferenceMan() string {
	app := NewApp()
	var b strings.Builder
	fmt.Fprintf(&b, "%% paretonav 1 \"\" \"paretonav %s\"\n\n", app.Version)
	fmt.Fprintf(&b, "# NAME\n\nparetonav - %s\n\n", app.Usage)
	fmt.Fprintf(&b, "# SYNOPSIS\n\n**paretonav** [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS...]\n\n")
	b.WriteString("# GLOBAL OPTIONS\n\n")
	writeFlags(&b, app.Flags, "##")
	b.WriteString("\n# COMMANDS\n\n")
	walkVisible(app.Commands, "paretonav", func(name string, c *ucli.Command) {
		writeCommand(&b, name, c, "##", false)
	})
	fmt.Fprintf(&b, "# SEE ALSO\n\nThe reference in Markdown, docs/cli.md; `paretonav COMMAND --help`.\n")
	return string(md2man.Render([]byte(b.String())))
}

// walkVisible calls f on every visible command and subcommand, depth
// first, with its full name.
func walkVisible(cmds []*ucli.Command, prefix string, f func(name string, c *ucli.Command)) {
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" { // urfave/cli adds help commands when it runs
			continue
		}
		name := prefix + " " + c.Name
		f(name, c)
		walkVisible(c.Subcommands, name, f)
	}
}

// anchor is the GitHub-style anchor of a heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

// writeCommand writes one command's section: usage, synopsis,
// description, subcommands (linked to their sections with links) and
// flags.
func writeCommand(b *strings.Builder, name string, c *ucli.Command, level string, links bool) {
	fmt.Fprintf(b, "\n%s %s\n\n%s.\n\n", level, name, sentence(c.Usage))
	synopsis := name
	subs := slices.DeleteFunc(slices.Clone(c.Subcommands), func(s *ucli.Command) bool { return s.Hidden || s.Name == "help" })
	if len(subs) > 0 {
		synopsis += " COMMAND"
	}
	if len(docFlags(c.Flags)) > 0 {
		synopsis += " [OPTIONS]"
	}
	if c.ArgsUsage != "" {
		synopsis += " " + c.ArgsUsage
	}
	fmt.Fprintf(b, "```\n%s\n```\n\n", synopsis)
	if c.Description != "" {
		writeText(b, c.Description)
	}
	if len(subs) > 0 {
		b.WriteString("Commands:\n\n")
		for _, s := range subs {
			switch {
			case links:
				fmt.Fprintf(b, "- [%s](#%s): %s\n", name+" "+s.Name, anchor(name+" "+s.Name), s.Usage)
			default:
				fmt.Fprintf(b, "- %s: %s\n", name+" "+s.Name, s.Usage)
			}
		}
		b.WriteString("\n")
	}
	writeFlags(b, c.Flags, level+"#")
}

// docFlags are the flags the reference lists: all but --help, which
// urfave/cli adds to every command it runs (the reference says every
// command takes it).
func docFlags(flags []ucli.Flag) []ucli.Flag {
	return slices.DeleteFunc(slices.Clone(flags), func(f ucli.Flag) bool { return f.Names()[0] == "help" })
}

// sentence is s with a capital first letter and no final period.
func sentence(s string) string {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// writeText writes a description: its paragraphs as they are, and its
// indented lines (examples, tables) as code blocks.
func writeText(b *strings.Builder, text string) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	inCode := false
	for i, l := range lines {
		indented := strings.HasPrefix(l, "  ")
		blank := strings.TrimSpace(l) == ""
		// A blank line inside an indented block stays in the block when
		// the block goes on after it.
		if blank && inCode && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") {
			b.WriteString("\n")
			continue
		}
		switch {
		case indented && !inCode:
			b.WriteString("```\n")
			inCode = true
		case !indented && inCode:
			b.WriteString("```\n")
			inCode = false
		}
		if inCode {
			l = strings.TrimPrefix(l, "  ")
		}
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	if inCode {
		b.WriteString("```\n")
	}
	b.WriteString("\n")
}

// writeFlags writes flags as --help prints them (placeholder, usage,
// default), grouped by category, the uncategorised first.
func writeFlags(b *strings.Builder, flags []ucli.Flag, level string) {
	var cats []string
	byCat := map[string][]ucli.Flag{}
	for _, f := range docFlags(flags) {
		cat := ""
		if cf, ok := f.(ucli.CategorizableFlag); ok {
			cat = cf.GetCategory()
		}
		if _, ok := byCat[cat]; !ok {
			cats = append(cats, cat)
		}
		byCat[cat] = append(byCat[cat], f)
	}
	// Uncategorised first, then categories by name.
	sortCats(cats)
	for _, cat := range cats {
		title := cat
		if title == "" {
			title = "Options"
		}
		fmt.Fprintf(b, "%s %s\n\n", level, title)
		for _, f := range byCat[cat] {
			names, usage, _ := strings.Cut(ucli.FlagStringer(f), "\t")
			if i := strings.Index(names, " [ "); i >= 0 { // a slice flag's repetition
				names = names[:i]
			}
			fmt.Fprintf(b, "- `%s`: %s\n", names, usage)
		}
		b.WriteString("\n")
	}
}

// catOrder is the order of flag categories in the reference: what a run
// reads, what it trains, how, what it writes; others after, by name.
var catOrder = []string{"", "Problem", "Data", "Model", "Method", "Training", "Run", "Output", "Slurm", "Kubernetes", "Configuration"}

// sortCats sorts category names in catOrder, unknown ones last by name.
func sortCats(cats []string) {
	rank := func(c string) int {
		if i := slices.Index(catOrder, c); i >= 0 {
			return i
		}
		return len(catOrder)
	}
	slices.SortStableFunc(cats, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
}

// writeReference writes the reference files into dir (the docs command's
// work, for tests).
func writeReference(dir string) error {
	for name, text := range map[string]string{"cli.md": ReferenceMarkdown(), "paretonav.1": ReferenceMan()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
