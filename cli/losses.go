package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune/front"
)

var lossesCommand = &ucli.Command{
	Name:  "losses",
	Usage: "list the loss kinds a task may name",
	Description: `Lists the loss kinds a --task NAME:LOSS:OUTPUT:TARGET[:key=value,...] may
name: what the loss is, what the target array holds for the output it
reads, the options it takes and the metrics eval and front report for it.
--json prints {"losses": [...]}, one object per kind with the same fields.

` + lossTable("  "),
	Flags:  []ucli.Flag{jsonFlag},
	Action: runLosses,
}

func init() { register(lossesCommand) }

func runLosses(c *ucli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("losses takes no arguments, got %q", c.Args().First())
	}
	if c.Bool(jsonFlag.Name) {
		return writeJSON(c.App.Writer, struct {
			Losses []backend.LossKind `json:"losses"`
		}{backend.Losses()})
	}
	_, err := fmt.Fprint(c.App.Writer, lossTable(""))
	return err
}

// lossTable lists every loss kind: its name and summary, its target, its
// options and its metrics, one line each, every line starting with
// indent.
func lossTable(indent string) string {
	var b strings.Builder
	for _, k := range backend.Losses() {
		fmt.Fprintf(&b, "%s%s: %s\n", indent, k.Name, k.Summary)
		fmt.Fprintf(&b, "%s    target: %s\n", indent, k.Target)
		for _, o := range k.Options {
			fmt.Fprintf(&b, "%s    option %s=N (default %d): %s\n", indent, o.Key, o.Default, o.Doc)
		}
		if m := front.MetricsDoc(k.Metrics); m != "" {
			fmt.Fprintf(&b, "%s    metrics: %s\n", indent, m)
		}
	}
	return b.String()
}

// metricsByKind lists, for eval's reference, the metrics of the loss
// kinds that have some, the kinds of one family together on an indented
// line: "  ce/nll: miou and pixel_acc, ...".
func metricsByKind() string {
	var families []string
	kinds := map[string][]string{}
	for _, k := range backend.Losses() {
		if k.Metrics == "" {
			continue
		}
		if kinds[k.Metrics] == nil {
			families = append(families, k.Metrics)
		}
		kinds[k.Metrics] = append(kinds[k.Metrics], k.Name)
	}
	parts := make([]string, len(families))
	for i, f := range families {
		parts[i] = "  " + strings.Join(kinds[f], "/") + ": " + front.MetricsDoc(f)
	}
	return strings.Join(parts, "\n")
}
