package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/models/datasets"
)

var dataCommand = &ucli.Command{
	Name:  "data",
	Usage: "write a two-item dataset as NPZ (multimnist, multifashion, fashionmnist)",
	Description: `Builds the datasets of Pareto MTL (Lin et al. 2019), used by EPO and PNG:
36x36 images holding two 28x28 items, one at the top left (offset 0,0) and one
at the bottom right (offset 8,8), overlaps taking the brighter pixel. Arrays:
x [N,1,36,36] float32 in [0,1]; left, right [N] int64 labels of the top-left
and bottom-right items.

  multimnist    two MNIST digits
  multifashion  two Fashion-MNIST items
  fashionmnist  Multi-(Fashion+MNIST): a Fashion-MNIST item at the top left
                (left) and an MNIST digit at the bottom right (right)

Training pairs are drawn (seeded, with replacement) from the 60,000 training
images, test pairs from the 10,000 test images: 120,000 and 20,000 pairs by
default, or --limit (a smaller limit gives a prefix of a larger one).
MNIST's original files are built into paretonav ($PARETONAV_MNIST_DIR
overrides with a folder holding the same four files), Fashion-MNIST from
/usr/share/datasets/fashion-mnist ($PARETONAV_FASHION_DIR overrides).

--layout sener builds Sener & Koltun's (2018) construction instead, which
Pareto MTL's pickles follow: the right item at offset (6,6), so the items
overlap over 22x22 pixels rather than 20x20 and the last two rows and columns
stay blank; the left item of example k is source image k (every image in
turn, in file order, so --limit below the source's size keeps its first
images), the right one drawn at random. Sener & Koltun then
shrink the image to 28x28; the Pareto MTL pickles and this command keep
36x36.`,
}

func init() {
	for _, k := range datasets.Kinds {
		dataCommand.Subcommands = append(dataCommand.Subcommands, withConfig(&ucli.Command{
			Name:  string(k),
			Usage: dataKindUsage[k],
			Flags: []ucli.Flag{
				&ucli.PathFlag{Name: "out", Usage: genOutUsage, Required: true},
				&ucli.StringFlag{Name: "split", Usage: "the `SPLIT`: train or test", Value: string(datasets.Train)},
				&ucli.IntFlag{Name: "limit", Usage: "at most `N` examples (0: 120,000 train / 20,000 test)"},
				&ucli.StringFlag{Name: "layout", Usage: "the `LAYOUT` of the two items: ours (right item at 8,8) or sener (at 6,6, lefts in file order)", Value: string(datasets.LayoutOurs)},
				genSeedFlag,
				&ucli.BoolFlag{Name: "compress", Usage: "deflate the archive (like numpy.savez_compressed)", Value: true},
				genForceFlag, genJSONFlag,
			},
			Action: func(c *ucli.Context) error { return dataAction(c, k) },
		}))
	}
	register(dataCommand)
}

var dataKindUsage = map[datasets.Kind]string{
	datasets.MultiMNIST:   "two MNIST digits (left: top left, right: bottom right)",
	datasets.MultiFashion: "two Fashion-MNIST items",
	datasets.FashionMNIST: "Multi-(Fashion+MNIST): Fashion-MNIST item top left, MNIST digit bottom right",
}

// dataSummary is what `data` prints.
type dataSummary struct {
	Dataset  string   `json:"dataset"`
	Split    string   `json:"split"`
	Examples int      `json:"examples"`
	Seed     int64    `json:"seed"`
	Layout   string   `json:"layout"`
	Out      string   `json:"out"`
	Bytes    int64    `json:"bytes"`
	Arrays   []string `json:"arrays"`
}

func dataAction(c *ucli.Context, kind datasets.Kind) error {
	split := datasets.Split(c.String("split"))
	if split != datasets.Train && split != datasets.Test {
		return fmt.Errorf("--split %q: want train or test", c.String("split"))
	}
	if c.Int("limit") < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or a positive count", c.Int("limit"))
	}
	out := c.Path("out")
	if err := genRefuseOverwrite(c, out); err != nil {
		return err
	}
	layout, err := datasets.ParseLayout(c.String("layout"))
	if err != nil {
		return fmt.Errorf("--layout %w", err)
	}
	arrays, err := datasets.Multi(kind, datasets.Options{Split: split, Limit: c.Int("limit"), Seed: c.Int64(genSeedFlag.Name), Layout: layout})
	if err != nil {
		return err
	}
	if err := npz.WriteOptions(out, arrays, npz.Options{Compress: c.Bool("compress")}); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	s := dataSummary{
		Dataset: string(kind), Split: string(split), Examples: arrays["x"].Shape[0],
		Seed: c.Int64(genSeedFlag.Name), Layout: string(layout), Out: out, Bytes: st.Size(),
	}
	names := make([]string, 0, len(arrays))
	for name := range arrays {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := arrays[name]
		dims := make([]string, len(a.Shape))
		for i, d := range a.Shape {
			dims[i] = fmt.Sprint(d)
		}
		s.Arrays = append(s.Arrays, fmt.Sprintf("%s [%s] %s", name, strings.Join(dims, ","), strings.ToLower(a.Type.String())))
	}
	w := c.App.Writer
	if c.Bool(genJSONFlag.Name) {
		return json.NewEncoder(w).Encode(s)
	}
	_, err = fmt.Fprintf(w, "wrote %s: %s %s, layout %s, %d examples (seed %d), %d bytes\n  %s\n",
		s.Out, s.Dataset, s.Split, s.Layout, s.Examples, s.Seed, s.Bytes, strings.Join(s.Arrays, "\n  "))
	return err
}
