package onnxpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedUpToDate reruns gen.sh in a scratch folder and checks that
// it reproduces onnx.proto and onnx.pb.go byte for byte. It is skipped
// where protoc, protoc-gen-go or Debian's onnx.proto are missing.
func TestGeneratedUpToDate(t *testing.T) {
	src := "/usr/lib/python3/dist-packages/onnx/onnx.proto"
	if v := os.Getenv("ONNX_PROTO"); v != "" {
		src = v
	}
	path := os.Getenv("PATH") + string(os.PathListSeparator) + filepath.Join(os.Getenv("HOME"), "go", "bin")
	for _, tool := range []string{"protoc", "protoc-gen-go"} {
		if _, err := lookPath(tool, path); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no onnx.proto: %v", err)
	}
	dir := t.TempDir()
	script, err := os.ReadFile("gen.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gen.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", filepath.Join(dir, "gen.sh"))
	cmd.Env = append(os.Environ(), "PATH="+path, "ONNX_PROTO="+src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, out)
	}
	for _, f := range []string{"onnx.proto", "onnx.pb.go"} {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: regenerating gives a different file; run go generate ./importer/onnxpb", f)
		}
	}
}

func lookPath(name, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}
