// Package cli holds paretonav's command-line commands (urfave/cli v2): one file
// per command, each a package-level *cli.Command registered in init. The
// commands parse flags and configuration, call job (tune, front, eval),
// batch, finetune, png, backend and importer, and print; they hold no
// algorithm of their own.
package cli

import (
	"errors"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/internal/termsafe"
	"github.com/paretonav/paretonav/job"
)

// Version is paretonav's version, recorded in the models it writes.
const Version = job.Version

var commands []*ucli.Command

// verboseFlag is --verbose/-v: details most runs do not need (the memory
// plan). It is global (paretonav -v tune ...) and also a flag of the
// commands that print such details (paretonav tune -v ...); -v is not
// --version, which keeps its long name only.
var verboseFlag = &ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "also print the memory plan (expected peak, scratch, garbage-collection target)", Category: "Output"}

func init() {
	ucli.VersionFlag = &ucli.BoolFlag{Name: "version", Usage: "print the version"}
	ucli.FlagStringer = flagString
}

// urfaveFlagString is urfave/cli's own rendering of a flag's help line.
var urfaveFlagString = ucli.FlagStringer

// flagString renders a flag's help line as urfave/cli does, without the
// default of a required flag (it says it is required instead) or of a
// switch that is off. A flag is required when urfave/cli checks it
// (Required), or when its usage says "required" (commands that take flags
// after their arguments check them themselves).
func flagString(f ucli.Flag) string {
	s := urfaveFlagString(f)
	if isRequired(f) {
		if i := strings.LastIndex(s, " (default: "); i >= 0 {
			s = s[:i]
		}
		if r, ok := f.(ucli.RequiredFlag); ok && r.IsRequired() {
			s += " (required)"
		}
	}
	if b, ok := f.(*ucli.BoolFlag); ok && !b.Value {
		s = strings.TrimSuffix(s, " (default: false)")
	}
	return s
}

// verbose reports whether --verbose was given to the command or before it.
func verbose(c *ucli.Context) bool {
	for _, ctx := range c.Lineage() {
		if ctx.Bool(verboseFlag.Name) {
			return true
		}
	}
	return false
}

// register adds a command to the application; each command file calls it
// from init.
func register(c *ucli.Command) {
	printable(c)
	commands = append(commands, c)
}

// printable makes the errors of c and its subcommands safe to print: names
// from models, data and jobs files quoted in them have their control
// characters escaped (newlines and tabs of the messages' own lines kept).
func printable(c *ucli.Command) {
	strictFloats(c)
	if c.Before != nil {
		c.Before = ucli.BeforeFunc(printableFunc(c.Before))
	}
	if c.Action != nil {
		c.Action = ucli.ActionFunc(printableFunc(c.Action))
	}
	if c.After != nil {
		c.After = ucli.AfterFunc(printableFunc(c.After))
	}
	for _, sub := range c.Subcommands {
		printable(sub)
	}
}

// printableFunc returns f with its error made printable.
func printableFunc(f func(*ucli.Context) error) func(*ucli.Context) error {
	return func(ctx *ucli.Context) error {
		if err := f(ctx); err != nil {
			return printableError{err}
		}
		return nil
	}
}

// printableError is an error whose text has its control characters
// escaped (termsafe.Text); errors.As and errors.Is see the error it wraps.
type printableError struct{ err error }

func (e printableError) Error() string { return termsafe.Text(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

// NewApp returns the paretonav application with every registered command.
func NewApp() *ucli.App {
	cmds := append([]*ucli.Command(nil), commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &ucli.App{
		Flags:                []ucli.Flag{verboseFlag},
		Name:                 "paretonav",
		Usage:                "Pareto navigation fine-tuning of multi-task ONNX models",
		Version:              Version,
		Commands:             cmds,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*ucli.Context, error) {},
	}
}

// Run runs the application on args (os.Args form).
func Run(args []string) error { return NewApp().Run(args) }

// ExitCoder is an error that carries a process exit code.
type ExitCoder interface{ ExitCode() int }

// ExitCode maps an error returned by Run to a process exit code: the code
// of an ExitCoder in its chain, else 1.
func ExitCode(err error) int {
	var ec ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// isRequired reports whether f must be given: urfave/cli's Required, or a
// usage that says "required".
func isRequired(f ucli.Flag) bool {
	if r, ok := f.(ucli.RequiredFlag); ok && r.IsRequired() {
		return true
	}
	d, ok := f.(ucli.DocGenerationFlag)
	return ok && strings.Contains(d.GetUsage(), "required)")
}
