package models

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/internal/testkit/ortcheck"
)

// systemPython is the interpreter that has numpy and onnx here; the
// python3 first on PATH may not.
const systemPython = "/usr/bin/python3"

func initializerShapes(m *onnxpb.ModelProto) map[string][]int64 {
	out := map[string][]int64{}
	for _, t := range m.Graph.Initializer {
		out[t.GetName()] = t.Dims
	}
	return out
}

func floats(t *testing.T, m *onnxpb.ModelProto, name string) []float32 {
	t.Helper()
	for _, tp := range m.Graph.Initializer {
		if tp.GetName() == name {
			x, err := importer.DecodeTensor(tp)
			if err != nil {
				t.Fatal(err)
			}
			return x.F32
		}
	}
	t.Fatalf("no initializer %q", name)
	return nil
}

func TestLeNet2Structure(t *testing.T) {
	m := LeNet2(1)
	want := map[string][]int64{
		"conv1.weight": {10, 1, 9, 9}, "conv1.bias": {10},
		"conv2.weight": {20, 10, 5, 5}, "conv2.bias": {20},
		"fc1.weight": {50, 500}, "fc1.bias": {50},
		"head_left.weight": {10, 50}, "head_left.bias": {10},
		"head_right.weight": {10, 50}, "head_right.bias": {10},
	}
	if got := initializerShapes(m); !reflect.DeepEqual(got, want) {
		t.Errorf("initializers %v, want %v", got, want)
	}
	var ops []string
	for _, n := range m.Graph.Node {
		ops = append(ops, n.GetOpType())
	}
	wantOps := "Conv MaxPool Relu Conv MaxPool Relu Flatten Gemm Relu Gemm LogSoftmax Gemm LogSoftmax"
	if got := strings.Join(ops, " "); got != wantOps {
		t.Errorf("ops %s, want %s", got, wantOps)
	}
	const params = 10*81 + 10 + 20*250 + 20 + 500*50 + 50 + 2*(50*10+10)
	if got := CountParams(m); got != params || params != 31910 {
		t.Errorf("CountParams = %d, want %d", got, params)
	}
	if m.GetIrVersion() != 7 || len(m.OpsetImport) != 1 || m.OpsetImport[0].GetVersion() != 13 || m.OpsetImport[0].GetDomain() != "" {
		t.Errorf("ir %d opset %v, want IR 7 and default-domain opset 13", m.GetIrVersion(), m.OpsetImport)
	}
	if _, err := importer.Decode(mustMarshal(t, m)); err != nil {
		t.Errorf("importer rejects LeNet2: %v", err)
	}
}

func mustMarshal(t *testing.T, m *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestShapesPropagate(t *testing.T) {
	tests := []struct {
		name  string
		model *onnxpb.ModelProto
		want  map[string][]int64
	}{
		{"lenet2", LeNet2(0), map[string][]int64{
			"conv1/relu": {-1, 10, 14, 14}, "flatten": {-1, 500}, LeNet2OutputLeft: {-1, 10}, LeNet2OutputRight: {-1, 10}}},
		{"mtan small", MTAN(MTANConfig{Width: 2, InputHeight: 64, InputWidth: 96}), map[string][]int64{
			"down_sampling.4": {-1, 16, 2, 3}, "up_sampling.0": {-1, 16, 4, 6},
			MTANOutputSeg: {-1, 13, 64, 96}, MTANOutputDepth: {-1, 1, 64, 96}, MTANOutputNormal: {-1, 3, 64, 96}}},
		{"mtan classes", MTAN(MTANConfig{Width: 1, InputHeight: 32, InputWidth: 32, Classes: 7}), map[string][]int64{
			MTANOutputSeg: {-1, 7, 32, 32}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shapes, err := inferShapes(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := shapes[name]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s: shape %v, want %v", name, got, want)
				}
			}
		})
	}
}

// mtanParamsReference counts the reference's parameters layer by layer, the
// way lorenmt/mtan's __init__ declares them (conv weight+bias, BN
// scale+shift), independently of the builder.
func mtanParamsReference(w, classes int64) int64 {
	f := []int64{w, 2 * w, 4 * w, 8 * w, 8 * w}
	conv := func(i, o, k int64) int64 { return i*o*k*k + o }
	cl := func(i, o int64) int64 { return conv(i, o, 3) + 2*o }
	att := func(a, b, c int64) int64 { return conv(a, b, 1) + 2*b + conv(b, c, 1) + 2*c }
	n := cl(3, f[0]) + cl(f[0], f[0])
	for i := range 4 {
		n += cl(f[i], f[i+1]) + cl(f[i+1], f[i])
	}
	n += 2 * cl(f[0], f[0])
	n += cl(f[1], f[1]) + cl(f[0], f[0])
	for i := 1; i < 4; i++ {
		n += 2*cl(f[i+1], f[i+1]) + 2*cl(f[i], f[i])
	}
	n += 3*att(f[0], f[0], f[0]) + 3*att(2*f[0], f[0], f[0])
	for range 3 {
		for i := range 4 {
			n += att(2*f[i+1], f[i+1], f[i+1]) + att(f[i+1]+f[i], f[i], f[i])
		}
	}
	n += cl(f[0], f[1]) + cl(f[0], f[0])
	for i := range 3 {
		n += cl(f[i+1], f[i+2]) + cl(f[i+1], f[i])
	}
	n += 2 * cl(f[4], f[4])
	for _, c := range []int64{classes, 1, 3} {
		n += conv(f[0], f[0], 3) + conv(f[0], c, 1)
	}
	return n
}

func TestMTANParams(t *testing.T) {
	tests := []struct {
		cfg  MTANConfig
		want int64
	}{
		// 44,229,073: the "44.229M" of the MTAN paper's SegNet-MTAN row
		// (the reference prints 44,229,076 with its 3 logsigma values).
		{MTANConfig{}, 44229073},
		{MTANConfig{Width: 64}, mtanParamsReference(64, 13)},
		{MTANConfig{Width: 8, InputHeight: 32, InputWidth: 64}, mtanParamsReference(8, 13)},
		{MTANConfig{Width: 3, Classes: 40}, mtanParamsReference(3, 40)},
	}
	for _, tc := range tests {
		if got := MTANParams(tc.cfg); got != tc.want {
			t.Errorf("MTANParams(%+v) = %d, want %d", tc.cfg, got, tc.want)
		}
	}
	small := MTANConfig{Width: 4, InputHeight: 32, InputWidth: 32}
	if a, b := MTANParams(small), CountParams(MTAN(small)); a != b {
		t.Errorf("MTANParams %d != CountParams(MTAN) %d", a, b)
	}
}

func TestMTANStructure(t *testing.T) {
	m := MTAN(MTANConfig{Width: 2, InputHeight: 32, InputWidth: 32, Seed: 3})
	shapes := initializerShapes(m)
	want := map[string][]int64{
		"encoder_block.0.0.weight":           {2, 3, 3, 3},
		"encoder_block.0.1.running_var":      {2},
		"conv_block_enc.1.0.weight":          {4, 4, 3, 3},
		"conv_block_enc.4.1.0.weight":        {16, 16, 3, 3},
		"conv_block_dec.2.1.0.weight":        {4, 4, 3, 3},
		"decoder_block.4.0.weight":           {16, 16, 3, 3},
		"encoder_att.2.4.0.weight":           {16, 32, 1, 1},
		"encoder_att.0.0.3.weight":           {2, 2, 1, 1},
		"decoder_att.1.4.0.weight":           {16, 32, 1, 1},
		"decoder_att.1.0.0.weight":           {2, 4, 1, 1},
		"decoder_att.1.1.4.running_mean":     {2},
		"encoder_block_att.4.0.weight":       {16, 16, 3, 3},
		"decoder_block_att.1.0.weight":       {2, 4, 3, 3},
		"pred_task1.1.weight":                {13, 2, 1, 1},
		"pred_task3.0.weight":                {2, 2, 3, 3},
		"pred_task2.1.bias":                  {1},
		"encoder_block_att.0.1.running_mean": {4},
	}
	for name, w := range want {
		if got, ok := shapes[name]; !ok || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: shape %v (present %v), want %v", name, got, ok, w)
		}
	}
	counts := map[string]int{}
	for _, n := range m.Graph.Node {
		counts[n.GetOpType()]++
	}
	// 5 encoder + 5 decoder + 8 conv_block_enc + 8 conv_block_dec shared
	// layers; per task 10 attention blocks with 2 BN each and 10 shared
	// attention convs applied once per task.
	wantCounts := map[string]int{
		"MaxPool":            5 + 3*5,
		"MaxUnpool":          5,
		"Resize":             3 * 5,
		"Sigmoid":            3 * 10,
		"BatchNormalization": 26 + 3*(10*2+10),
		"Conv":               26 + 3*(10*2+10+2),
		"LogSoftmax":         1,
		"ReduceL2":           1,
		"Div":                1,
	}
	for op, w := range wantCounts {
		if counts[op] != w {
			t.Errorf("%d %s nodes, want %d", counts[op], op, w)
		}
	}
	for _, name := range []string{"encoder_block.0.1.running_mean", "decoder_att.2.3.4.running_mean"} {
		for _, v := range floats(t, m, name) {
			if v != 0 {
				t.Fatalf("%s holds %v, want zeros", name, v)
			}
		}
	}
	for _, v := range floats(t, m, "decoder_att.2.3.4.running_var") {
		if v != 1 {
			t.Fatalf("running_var holds %v, want ones", v)
		}
	}
	if _, err := importer.Decode(mustMarshal(t, m)); err != nil {
		t.Errorf("importer rejects MTAN: %v", err)
	}
}

func TestMTANConfigValidate(t *testing.T) {
	tests := []struct {
		cfg     MTANConfig
		wantErr string
	}{
		{MTANConfig{}, ""},
		{MTANConfig{Width: -1}, "width"},
		{MTANConfig{InputHeight: 48}, "multiples of 32"},
		{MTANConfig{InputWidth: 16}, "multiples of 32"},
		{MTANConfig{Classes: 1}, "classes"},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want error containing %q", tc.cfg, err, tc.wantErr)
		}
	}
}

func TestInitialisation(t *testing.T) {
	a, b, c := mustMarshal(t, LeNet2(7)), mustMarshal(t, LeNet2(7)), mustMarshal(t, LeNet2(8))
	if !bytes.Equal(a, b) {
		t.Error("LeNet2(7) differs between two calls")
	}
	if bytes.Equal(a, c) {
		t.Error("LeNet2(7) and LeNet2(8) are identical")
	}
	m := LeNet2(7)
	// PyTorch's default: weight and bias in U(±1/√fan_in), spread out.
	for _, tc := range []struct {
		name  string
		fanIn float64
	}{{"conv1.weight", 81}, {"conv1.bias", 81}, {"conv2.weight", 250}, {"fc1.weight", 500}, {"head_right.bias", 50}} {
		bound := 1 / math.Sqrt(tc.fanIn)
		v := floats(t, m, tc.name)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range v {
			lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
		}
		if lo < -bound || hi > bound || (len(v) > 50 && (lo > -0.8*bound || hi < 0.8*bound)) {
			t.Errorf("%s in [%g, %g], want spread over ±%g", tc.name, lo, hi, bound)
		}
	}
	// MTAN: xavier normal weights (std √(2/(fan_in+fan_out))), zero bias.
	mt := MTAN(MTANConfig{Width: 8, InputHeight: 32, InputWidth: 32, Seed: 1})
	w := floats(t, mt, "encoder_block.3.0.weight") // 32→64, 3×3
	var ss float64
	for _, x := range w {
		ss += float64(x) * float64(x)
	}
	std, want := math.Sqrt(ss/float64(len(w))), math.Sqrt(2/float64(32*9+64*9))
	if math.Abs(std-want) > 0.05*want {
		t.Errorf("encoder_block.3.0.weight std %g, want %g", std, want)
	}
	for _, x := range floats(t, mt, "encoder_block.3.0.bias") {
		if x != 0 {
			t.Fatalf("conv bias %v, want 0", x)
		}
	}
}

func TestWriteModelAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lenet2.onnx")
	if err := WriteModel(path, LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	m, err := importer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := CountParams(m.Proto); got != 31910 {
		t.Errorf("reloaded model has %d parameters", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after one write, want 1", len(entries))
	}
	err = WriteModel(filepath.Join(dir, "missing", "x.onnx"), LeNet2(1))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("writing into a missing folder: %v", err)
	}
}

func TestDuplicateNamePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"w"`) {
			t.Errorf("recover() = %v, want a panic naming \"w\"", r)
		}
	}()
	b := newBuilder("g", 0, false)
	b.constant("w", []int64{1}, 0)
	b.constant("w", []int64{1}, 0)
}

// TestONNXChecker runs the official onnx.checker and shape inference on
// the models (skipped when /usr/bin/python3 has no onnx package).
func TestONNXChecker(t *testing.T) {
	if err := exec.Command(systemPython, "-c", "import onnx").Run(); err != nil {
		t.Skipf("skipping: %s cannot import onnx: %v", systemPython, err)
	}
	dir := t.TempDir()
	tests := []struct {
		file  string
		model *onnxpb.ModelProto
		want  []string
	}{
		{"lenet2.onnx", LeNet2(1), []string{"logp_left=N,10", "logp_right=N,10"}},
		{"mtan.onnx", MTAN(MTANConfig{Width: 2, InputHeight: 32, InputWidth: 64}),
			[]string{"seg_logp=N,13,32,64", "depth=N,1,32,64", "normal=N,3,32,64"}},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.file)
		if err := WriteModel(path, tc.model); err != nil {
			t.Fatal(err)
		}
		args := append([]string{filepath.Join("testdata", "check_onnx.py"), path}, tc.want...)
		out, err := exec.Command(systemPython, args...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Errorf("%s: onnx checker: %v\n%s", tc.file, err, out)
		}
	}
}

func randomInput(name string, shape []int, seed uint64) *importer.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()
	}
	return importer.NewFloat32(name, shape, v)
}

// TestORT runs both models in ONNX Runtime and checks output shapes and
// the properties of the heads (log-probabilities, unit normals).
func TestORT(t *testing.T) {
	ortcheck.Require(t)
	dir := t.TempDir()

	lenet := filepath.Join(dir, "lenet2.onnx")
	if err := WriteModel(lenet, LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	out, err := ortcheck.Run(lenet, map[string]*importer.Tensor{"x": randomInput("x", []int{3, 1, 36, 36}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{LeNet2OutputLeft, LeNet2OutputRight} {
		checkLogProbs(t, out[name], []int{3, 10})
	}

	mtan := filepath.Join(dir, "mtan.onnx")
	if err := WriteModel(mtan, MTAN(MTANConfig{Width: 2, InputHeight: 32, InputWidth: 64, Seed: 2})); err != nil {
		t.Fatal(err)
	}
	out, err = ortcheck.Run(mtan, map[string]*importer.Tensor{"x": randomInput("x", []int{2, 3, 32, 64}, 2)})
	if err != nil {
		t.Fatal(err)
	}
	checkLogProbs(t, out[MTANOutputSeg], []int{2, 13, 32, 64})
	if d := out[MTANOutputDepth]; d == nil || !reflect.DeepEqual(d.Shape, []int{2, 1, 32, 64}) {
		t.Errorf("depth = %v, want shape [2 1 32 64]", d)
	}
	nrm := out[MTANOutputNormal]
	if nrm == nil || !reflect.DeepEqual(nrm.Shape, []int{2, 3, 32, 64}) {
		t.Fatalf("normal = %v, want shape [2 3 32 64]", nrm)
	}
	const plane = 32 * 64
	for b := range 2 {
		for p := range plane {
			var ss float64
			for c := range 3 {
				v := float64(nrm.F32[(b*3+c)*plane+p])
				ss += v * v
			}
			if math.Abs(ss-1) > 1e-4 {
				t.Fatalf("normal at batch %d pixel %d has squared norm %g, want 1", b, p, ss)
			}
		}
	}
}

// checkLogProbs checks x's shape and that exp(x) sums to 1 over axis 1.
func checkLogProbs(t *testing.T, x *importer.Tensor, shape []int) {
	t.Helper()
	if x == nil || !reflect.DeepEqual(x.Shape, shape) {
		t.Fatalf("output %v, want shape %v", x, shape)
	}
	c, inner := shape[1], 1
	for _, d := range shape[2:] {
		inner *= d
	}
	for b := range shape[0] {
		for p := range inner {
			var s float64
			for k := range c {
				s += math.Exp(float64(x.F32[(b*c+k)*inner+p]))
			}
			if math.Abs(s-1) > 1e-4 {
				t.Fatalf("%s: probabilities at batch %d position %d sum to %g", x.Name, b, p, s)
			}
		}
	}
}

// TestLeNet2MatchesPyTorch runs LeNet2(1) in ONNX Runtime on the batch in
// testdata/lenet2_torch.npz and compares with PyTorch's outputs for the
// same weights (made by testdata/lenet2_torch.py).
func TestLeNet2MatchesPyTorch(t *testing.T) {
	ortcheck.Require(t)
	ref, err := npz.Read(filepath.Join("testdata", "lenet2_torch.npz"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lenet2.onnx")
	if err := WriteModel(path, LeNet2(1)); err != nil {
		t.Fatal(err)
	}
	out, err := ortcheck.Run(path, map[string]*importer.Tensor{"x": ref["x"]})
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-5
	for _, name := range []string{LeNet2OutputLeft, LeNet2OutputRight} {
		got, want := out[name], ref[name]
		if got == nil || !reflect.DeepEqual(got.Shape, want.Shape) {
			t.Fatalf("%s: %v, want shape %v", name, got, want.Shape)
		}
		for i := range want.F32 {
			if d := math.Abs(float64(got.F32[i] - want.F32[i])); d > tol {
				t.Fatalf("%s[%d] = %g, PyTorch %g (|diff| %g > %g)", name, i, got.F32[i], want.F32[i], d, tol)
			}
		}
	}
}
