package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
)

// evil is a name that, printed raw, turns a terminal's text red and sets
// its window title.
const evil = "\x1b[31mRED\x1b]0;TITLE\x07"

// evilShown is how evil must be printed.
const evilShown = `\x1b[31mRED\x1b]0;TITLE\a`

// rawControl returns a description of the first control character in s
// that a terminal would act on (C0 but newline and tab, DEL, C1) or of its
// first byte that is not UTF-8; "" if none.
func rawControl(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("byte %#x (not UTF-8) at %d", s[i], i)
		case r < 0x20 && r != '\n' && r != '\t', r >= 0x7f && r <= 0x9f:
			return fmt.Sprintf("%U at %d", r, i)
		}
	}
	return ""
}

// evilLeNet writes the two-headed LeNet with every value, node, its
// producer and a metadata value renamed to start with evil (and, with
// badOp, one Relu replaced by an op of that name in a domain of that
// name), and data whose arrays carry the renamed input's name. It returns
// the model, the data and the renamed outputs.
func evilLeNet(t *testing.T, dir string, badOp bool) (model, data, left, right string) {
	t.Helper()
	m := models.LeNet2(1)
	g := m.Graph
	ren := func(s string) string {
		if s == "" {
			return s
		}
		return evil + s
	}
	for _, tp := range g.Initializer {
		tp.Name = proto.String(ren(tp.GetName()))
	}
	for _, vi := range append(append(g.Input, g.Output...), g.ValueInfo...) {
		vi.Name = proto.String(ren(vi.GetName()))
	}
	relu := false
	for i, n := range g.Node {
		n.Name = proto.String(fmt.Sprintf("%snode%d", evil, i))
		for j := range n.Input {
			n.Input[j] = ren(n.Input[j])
		}
		for j := range n.Output {
			n.Output[j] = ren(n.Output[j])
		}
		if badOp && !relu && n.GetOpType() == "Relu" {
			n.OpType, n.Domain, relu = proto.String(evil+"Op"), proto.String(evil+"dom"), true
		}
	}
	if badOp {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(evil + "dom"), Version: proto.Int64(1)})
	}
	m.ProducerName, m.ProducerVersion = proto.String(evil+"torch"), proto.String(evil)
	m.MetadataProps = append(m.MetadataProps, &onnxpb.StringStringEntryProto{Key: proto.String("paretonav"), Value: proto.String(evil)})
	model, data = filepath.Join(dir, "evil.onnx"), filepath.Join(dir, "evil.npz")
	if badOp {
		model = filepath.Join(dir, "evilop.onnx")
	}
	if err := models.WriteModel(model, m); err != nil {
		t.Fatal(err)
	}
	arrays := tinyArrays(4)
	arrays[evil+"x"] = arrays["x"]
	delete(arrays, "x")
	if err := npz.Write(data, arrays); err != nil {
		t.Fatal(err)
	}
	return model, data, evil + models.LeNet2OutputLeft, evil + models.LeNet2OutputRight
}

// TestNamesFromFilesAreEscaped: names read from a model (nodes, values, op
// types, domains, producer, metadata) and tasks naming them reach the
// terminal escaped, in inspect's and eval's output and in the errors of a
// failing eval and tune.
func TestNamesFromFilesAreEscaped(t *testing.T) {
	dir := t.TempDir()
	model, data, left, right := evilLeNet(t, dir, false)
	opModel, _, _, _ := evilLeNet(t, dir, true)
	tasks := []string{"--task", evil + "left:nll:" + left + ":left", "--task", evil + "right:nll:" + right + ":right"}
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		shown   []string // each must appear
	}{
		{"inspect", []string{"inspect", model, "--batch", "2"}, false,
			[]string{"producer " + evilShown + "torch", evilShown + "x", evilShown + "logp_left", evilShown + "conv1.weight", "tuned by paretonav: " + evilShown}},
		{"inspect unsupported op", []string{"inspect", opModel}, false,
			[]string{evilShown + "dom." + evilShown + "Op", evilShown + "node"}},
		{"eval", append([]string{"eval", model, "--data", data}, tasks...), false,
			[]string{evilShown + "left", evilShown + "right"}},
		{"eval a missing output", []string{"eval", model, "--data", data, "--task", "t:nll:" + evil + "nope:left"}, true,
			[]string{evilShown + "nope"}},
		{"eval a missing array", []string{"eval", model, "--data", data, "--task", "t:nll:" + left + ":" + evil + "nope"}, true,
			[]string{evilShown + "nope"}},
		{"tune an unsupported op", append([]string{"tune", opModel, "--data", data, "--criterion", "left+right", "--steps", "1", "--out", filepath.Join(dir, "o.onnx")}, tasks...), true,
			[]string{evilShown + "dom." + evilShown + "Op", evilShown + "node"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &atStep{}
			withTuneRecorder(t, rec)
			out, err := runCLI(t, tc.args...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\n%s", err, tc.wantErr, out)
			}
			if err != nil {
				out += "\n" + err.Error()
			}
			if c := rawControl(out); c != "" {
				t.Errorf("raw %s in:\n%q", c, out)
			}
			for _, s := range tc.shown {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %s:\n%s", s, out)
				}
			}
			if rec.steps != 0 {
				t.Errorf("%d steps ran", rec.steps)
			}
		})
	}
}
