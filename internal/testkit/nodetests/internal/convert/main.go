// Command convert turns the ONNX node-test corpus that onnx-go v0.5.0
// ships as generated Go source (package backend/testbackend/onnx, one
// onnx_test_*.go file per case) into ONNX's own node-test layout, the one
// internal/testkit/nodetests reads from the repository:
//
//	OUT/test_abs/model.onnx
//	OUT/test_abs/test_data_set_0/input_0.pb   (serialized TensorProto)
//	OUT/test_abs/test_data_set_0/output_0.pb
//
// It reads the Go source with go/parser and evaluates only literals; it
// never links onnx-go. Each tensor takes its element type, name and (when
// fully static) shape from the model's graph inputs and outputs, the
// gorgonia backing slice supplying the values; values are written as
// raw_data. Cases whose registration onnx-go comments out are left out.
//
// The corpus is written into a new folder beside OUT, read back with
// nodetests.LoadDir and compared, value by value, with what was parsed;
// only then does it replace OUT, so a failed run leaves OUT as it was.
// Rerunning on the same source gives byte-identical files.
//
// Usage, from the repository root (internal/testkit/nodetests/testdata/README.md):
//
//	go mod download github.com/owulveryck/onnx-go@v0.5.0
//	go run ./internal/testkit/nodetests/internal/convert \
//	    -src "$(go env GOMODCACHE)/github.com/owulveryck/onnx-go@v0.5.0/backend/testbackend/onnx" \
//	    -out internal/testkit/nodetests/testdata/node
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	src := flag.String("src", "", "onnx-go's corpus folder: `DIR` = $(go env GOMODCACHE)/github.com/owulveryck/onnx-go@v0.5.0/backend/testbackend/onnx")
	out := flag.String("out", "", "the corpus folder to write (replaced as a whole), e.g. internal/testkit/nodetests/testdata/node")
	flag.Parse()
	n, err := convert(*src, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
	fmt.Printf("convert: %d cases from %s written to %s\n", n, *src, *out)
}

// convert converts the corpus in folder src into folder out and returns
// the number of cases.
func convert(src, out string) (int, error) {
	if src == "" || out == "" {
		return 0, errors.New("-src and -out are required (run with -h)")
	}
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return 0, fmt.Errorf("-src %s: not a folder (run `go mod download github.com/owulveryck/onnx-go@v0.5.0` first)", src)
	}
	cases, err := parseDir(src)
	if err != nil {
		return 0, err
	}
	err = replaceDir(out,
		func(dir string) error { return writeCorpus(dir, cases) },
		func(dir string) error { return verify(dir, cases) })
	if err != nil {
		return 0, err
	}
	return len(cases), nil
}
