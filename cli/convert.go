package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/job"
)

var (
	convertInlineFlag = &ucli.BoolFlag{Name: "inline-data", Usage: "store every weight inside OUT.onnx, even those IN.onnx keeps in external data"}
	convertForceFlag  = &ucli.BoolFlag{Name: "force", Usage: "overwrite OUT.onnx (and OUT.onnx.data) if they exist"}
)

var convertCommand = &ucli.Command{
	Name:      "convert",
	Usage:     "import an ONNX model and write it back unchanged",
	ArgsUsage: "IN.onnx OUT.onnx",
	Description: `Reads IN.onnx (validating it and its external data, if any) and writes
OUT.onnx with the same graph, weights, opsets and metadata; convert adds
nothing to the model. Weights IN.onnx kept in external data go to
OUT.onnx.data beside OUT.onnx (4096-aligned), unless --inline-data; their
external_data entries (location, offset, length) are the only fields that
change. Writing is atomic; existing files are kept unless --force, and
--force never replaces IN.onnx, its data file, or a file that is not a
model.`,
	Flags:  []ucli.Flag{convertInlineFlag, convertForceFlag, maxMemoryFlag},
	Action: convertAction,
}

func init() { register(withInterspersed(convertCommand)) }

func convertAction(c *ucli.Context) error {
	args := positional(c)
	if len(args) != 2 {
		return ucli.Exit(fmt.Sprintf("convert: expected IN.onnx OUT.onnx, got %d arguments", len(args)), 2)
	}
	in, out := args[0], args[1]
	budget, err := job.ResolveBudget(c.String(maxMemoryFlag.Name))
	if err != nil {
		return err
	}
	m, err := importer.LoadWithin(in, budget)
	if err != nil {
		return err
	}
	opt := importer.SaveOptions{InlineData: c.Bool(convertInlineFlag.Name), Force: c.Bool(convertForceFlag.Name)}
	d := &job.Destinations{Force: opt.Force}
	d.ModelInput("IN.onnx", in, m)
	if opt.InlineData {
		d.Model("OUT.onnx", out)
	} else {
		d.ModelOutput("OUT.onnx", out, m)
	}
	if err := d.Check(); err != nil {
		return err
	}
	if err := importer.Save(out, m, nil, opt); err != nil {
		return err
	}
	inits := len(m.Proto.GetGraph().GetInitializer())
	where := "inline"
	if m.HasExternalData() && !opt.InlineData {
		where = "external data in " + importer.DataFileName(out)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %d nodes, %d initializers (%s), IR %d, opset %d\n",
		out, len(m.Proto.GetGraph().GetNode()), inits, where, m.Proto.GetIrVersion(), m.Opset(""))
	return nil
}
