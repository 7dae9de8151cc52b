package importer_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// TestSaveORT checks in ONNX Runtime that saved models run: unchanged
// models (inline, external data at 4096-aligned offsets, external moved
// inline) give the original's outputs bit for bit, and a model saved with
// a zeroed last layer outputs zeros.
func TestSaveORT(t *testing.T) {
	ortcheck.Require(t)
	x := importer.NewFloat32("x", []int{3, 4}, []float32{1, -2, 3, -4, 0.5, 0.25, -1, 2, 3, 3, 3, 3})
	xv := importer.NewFloat32("x", []int{3, 2, 3, 4}, make([]float32, 72))
	for i := range xv.F32 {
		xv.F32[i] = float32(i%7) - 3
	}
	cases := []struct {
		fixture string
		in      *importer.Tensor
		opt     importer.SaveOptions
		zero    string // initializer to zero, expecting zero outputs
	}{
		{"view_dyn13.onnx", xv, importer.SaveOptions{}, ""},
		{"view_dyn11.onnx", xv, importer.SaveOptions{}, ""},
		{"mlp_ext.onnx", x, importer.SaveOptions{}, ""},
		{"mlp_ext.onnx", x, importer.SaveOptions{InlineData: true}, ""},
		{"mlp_ext.onnx", x, importer.SaveOptions{}, "w2"},
	}
	for _, c := range cases {
		t.Run(c.fixture+c.zero, func(t *testing.T) {
			src := filepath.Join("testdata", c.fixture)
			m, err := importer.Load(src)
			if err != nil {
				t.Fatal(err)
			}
			var weights map[string]*importer.Tensor
			if c.zero != "" {
				inits, err := m.Initializers()
				if err != nil {
					t.Fatal(err)
				}
				z := inits[c.zero]
				z.F32 = make([]float32, len(z.F32))
				weights = map[string]*importer.Tensor{c.zero: z}
			}
			out := filepath.Join(t.TempDir(), "saved.onnx")
			if err := importer.Save(out, m, weights, c.opt); err != nil {
				t.Fatal(err)
			}
			inputs := map[string]*importer.Tensor{"x": c.in}
			want, err := ortcheck.Run(src, inputs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ortcheck.Run(out, inputs)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				g := got[name]
				if g == nil || len(g.F32) != len(w.F32) || len(g.F32) == 0 {
					t.Fatalf("%s: got %v, want %d values", name, g, len(w.F32))
				}
				for i := range w.F32 {
					exp := w.F32[i]
					if c.zero != "" {
						exp = 0
					}
					if math.Float32bits(g.F32[i]) != math.Float32bits(exp) && !(exp == 0 && g.F32[i] == 0) {
						t.Errorf("%s[%d] = %v, want %v", name, i, g.F32[i], exp)
					}
				}
			}
		})
	}
}
