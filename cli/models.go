package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
)

// Flags shared by the generator commands (models, data) that write a file.
var (
	genOutUsage  = "write to `FILE`"
	genForceFlag = &ucli.BoolFlag{Name: "force", Usage: "overwrite --out if it exists"}
	genJSONFlag  = &ucli.BoolFlag{Name: "json", Usage: "print the summary as JSON"}
	genSeedFlag  = &ucli.Int64Flag{Name: "seed", Usage: "random `SEED` (initial weights, pairings)", Value: 1}
)

var modelsCommand = &ucli.Command{
	Name:  "models",
	Usage: "write a reference architecture as an ONNX model (lenet2, mtan)",
	Description: `lenet2: the two-headed LeNet of Pareto MTL / EPO / PNG for MultiMNIST
(input x [N,1,36,36], outputs logp_left and logp_right [N,10], 31,910 parameters).

mtan: the SegNet-MTAN of lorenmt/mtan for NYUv2 (input x [N,3,H,W], outputs
seg_logp [N,13,H,W], depth [N,1,H,W] and normal [N,3,H,W]); --width 64 and
--size 288x384 give the full model, 44,229,073 parameters.

Both are written atomically; an existing file is kept unless --force.`,
	Subcommands: []*ucli.Command{
		withConfig(&ucli.Command{
			Name:   "lenet2",
			Usage:  "two-headed LeNet for MultiMNIST",
			Flags:  []ucli.Flag{&ucli.PathFlag{Name: "out", Usage: genOutUsage, Required: true}, genSeedFlag, genForceFlag, genJSONFlag},
			Action: modelsLeNet2,
		}),
		withConfig(&ucli.Command{
			Name:  "mtan",
			Usage: "SegNet-MTAN for NYUv2 (segmentation, depth, surface normals)",
			Flags: []ucli.Flag{
				&ucli.PathFlag{Name: "out", Usage: genOutUsage, Required: true},
				&ucli.IntFlag{Name: "width", Usage: "the first level's `C` channels (levels: ×1,2,4,8,8)", Value: 64},
				&ucli.StringFlag{Name: "size", Usage: "input `HxW`, both multiples of 32", Value: "288x384"},
				&ucli.IntFlag{Name: "classes", Usage: "the number `K` of segmentation classes", Value: 13},
				genSeedFlag, genForceFlag, genJSONFlag,
			},
			Action: modelsMTAN,
		}),
	},
}

func init() { register(modelsCommand) }

// genRefuseOverwrite returns an error when path exists and --force is not set.
func genRefuseOverwrite(c *ucli.Context, path string) error {
	if c.Bool(genForceFlag.Name) {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("--out %s: file exists (use --force to overwrite)", path)
	}
	return nil
}

// parseSizeHxW reads "HxW".
func parseSizeHxW(s string) (h, w int, err error) {
	hs, ws, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		h, err = strconv.Atoi(strings.TrimSpace(hs))
		if err == nil {
			w, err = strconv.Atoi(strings.TrimSpace(ws))
		}
	}
	if !ok || err != nil || h <= 0 || w <= 0 {
		return 0, 0, fmt.Errorf("--size %q: want HEIGHTxWIDTH, e.g. 288x384", s)
	}
	return h, w, nil
}

// modelSummary is what `models` prints.
type modelSummary struct {
	Model   string `json:"model"`
	Out     string `json:"out"`
	Seed    int64  `json:"seed"`
	Params  int64  `json:"params"`
	Nodes   int    `json:"nodes"`
	Bytes   int64  `json:"bytes"`
	Inputs  string `json:"inputs"`
	Outputs string `json:"outputs"`
}

func modelsWriteSummary(c *ucli.Context, name string, m *onnxpb.ModelProto) error {
	out := c.Path("out")
	if err := models.WriteModel(out, m); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	s := modelSummary{
		Model: name, Out: out, Seed: c.Int64(genSeedFlag.Name), Params: models.CountParams(m),
		Nodes: len(m.Graph.Node), Bytes: st.Size(),
		Inputs: modelsDescribeValues(m.Graph.Input), Outputs: modelsDescribeValues(m.Graph.Output),
	}
	w := c.App.Writer
	if c.Bool(genJSONFlag.Name) {
		return json.NewEncoder(w).Encode(s)
	}
	_, err = fmt.Fprintf(w, "wrote %s: %s, %d parameters, %d nodes, %d bytes\n  inputs  %s\n  outputs %s\n",
		s.Out, s.Model, s.Params, s.Nodes, s.Bytes, s.Inputs, s.Outputs)
	return err
}

// modelsDescribeValues renders "name [d0,d1,...]" for each value.
func modelsDescribeValues(vs []*onnxpb.ValueInfoProto) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		var dims []string
		for _, d := range v.GetType().GetTensorType().GetShape().GetDim() {
			if p := d.GetDimParam(); p != "" {
				dims = append(dims, p)
			} else {
				dims = append(dims, strconv.FormatInt(d.GetDimValue(), 10))
			}
		}
		parts[i] = v.GetName() + " [" + strings.Join(dims, ",") + "]"
	}
	return strings.Join(parts, ", ")
}

func modelsLeNet2(c *ucli.Context) error {
	if err := genRefuseOverwrite(c, c.Path("out")); err != nil {
		return err
	}
	return modelsWriteSummary(c, "lenet2", models.LeNet2(c.Int64(genSeedFlag.Name)))
}

func modelsMTAN(c *ucli.Context) error {
	h, w, err := parseSizeHxW(c.String("size"))
	if err != nil {
		return err
	}
	cfg := models.MTANConfig{
		Width: c.Int("width"), InputHeight: h, InputWidth: w,
		Classes: c.Int("classes"), Seed: c.Int64(genSeedFlag.Name),
	}
	if cfg.Width < 1 {
		return fmt.Errorf("--width %d: want at least 1", cfg.Width)
	}
	if cfg.Classes < 2 {
		return fmt.Errorf("--classes %d: want at least 2", cfg.Classes)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--size %s: %w", c.String("size"), err)
	}
	if err := genRefuseOverwrite(c, c.Path("out")); err != nil {
		return err
	}
	return modelsWriteSummary(c, fmt.Sprintf("mtan (width %d, %dx%d, %d classes)", cfg.Width, h, w, cfg.Classes), models.MTAN(cfg))
}
