package backend

import (
	"errors"
	"flag"
	"fmt"
	"go/format"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/backend/internal/graph"
	"github.com/paretonav/paretonav/backend/internal/shape"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/internal/testkit/nodetests"
)

// Conformance bounds over the 348 ONNX node tests that onnx-go v0.5.0
// ships (its gorgonnx backend passes 96), every output compared element
// by element. Raise the floor and lower the ceiling as ops are added; a
// case moving from passed to failed then fails the test.
const (
	conformanceFloor = 310 // least number passed
	// conformanceCeiling is the most number failed (wrong values or
	// errors that are our bugs). The one failure is
	// TestMaxunpoolExportWithOutputShape, whose expected output
	// contradicts its own indices (internal/testkit/nodetests: ONNX Runtime
	// computes what we do).
	conformanceCeiling = 1
)

// Element-wise tolerances: |got − want| <= atol + rtol·|want|, ONNX's
// backend-test defaults for float32, tighter for float64 models. Integer
// and bool outputs must match exactly (backend computes them as floats or
// folds them at build time).
const (
	nodeRTol32, nodeATol32 = 1e-3, 1e-7
	nodeRTol64, nodeATol64 = 1e-7, 1e-12
)

var writeConformance = flag.Bool("conformance.write", false, "TestNodeConformance writes CONFORMANCE.md")

type nodeResult int

const (
	nodePassed nodeResult = iota
	nodeFailed
	nodeUnsupported
)

func (r nodeResult) String() string {
	return [...]string{"passed", "failed", "unsupported"}[r]
}

// runNodeTest opens one case without tasks, runs Outputs and compares
// every expected output element-wise. It reports unsupported when
// importer.Validate rejects the model or backend returns an
// *UnsupportedError or a *LimitError (a documented design limit), failed
// for wrong values and any other error.
func runNodeTest(c *nodetests.Case) (res nodeResult, msg string) {
	defer func() {
		if r := recover(); r != nil {
			res, msg = nodeFailed, fmt.Sprintf("panic: %v", r)
		}
	}()
	if c.Invalid != nil {
		return nodeUnsupported, c.Invalid.Error()
	}
	classify := func(stage string, err error) (nodeResult, string) {
		var unsup *graph.UnsupportedError
		var limit *graph.LimitError
		if errors.As(err, &unsup) || errors.As(err, &limit) {
			return nodeUnsupported, err.Error()
		}
		return nodeFailed, stage + ": " + err.Error()
	}
	md, err := Open(c.Model, nil, Options{Float64: anyFloat64(c)})
	if err != nil {
		return classify("Open", err)
	}
	batch := map[string]*importer.Tensor{}
	for _, in := range c.Inputs {
		batch[in.Name] = in
	}
	names := make([]string, len(c.ExpectedOutputs))
	for i, want := range c.ExpectedOutputs {
		names[i] = want.Name
	}
	got, err := md.Outputs(batch, names...)
	if err != nil {
		return classify("Outputs", err)
	}
	for _, want := range c.ExpectedOutputs {
		if err := compareOutput(got[want.Name], want); err != nil {
			return nodeFailed, fmt.Sprintf("output %q: %v", want.Name, err)
		}
	}
	return nodePassed, ""
}

// compareOutput checks shape and values of got against want.
func compareOutput(got, want *importer.Tensor) error {
	if got == nil {
		return errors.New("missing")
	}
	if !shape.Equal(got.Shape, want.Shape) {
		return fmt.Errorf("shape %v, expected %v", got.Shape, want.Shape)
	}
	rtol, atol := 0.0, 0.0
	switch want.Type {
	case importer.Float64:
		rtol, atol = nodeRTol64, nodeATol64
	case importer.Float32, importer.Float16:
		rtol, atol = nodeRTol32, nodeATol32
	}
	g, w := got.Float64s(), want.Float64s()
	if len(g) != len(w) {
		return fmt.Errorf("%d values, expected %d", len(g), len(w))
	}
	bad, first := 0, -1
	for i := range w {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= atol+rtol*math.Abs(w[i])) {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ (rtol %g, atol %g); first at %d: got %v, expected %v", bad, len(w), rtol, atol, first, g[first], w[first])
	}
	return nil
}

func anyFloat64(c *nodetests.Case) bool {
	for _, ts := range [][]*importer.Tensor{c.Inputs, c.ExpectedOutputs} {
		for _, t := range ts {
			if t.Type == importer.Float64 {
				return true
			}
		}
	}
	return false
}

// corpusErrors are cases whose expected outputs are known to be wrong
// (see internal/testkit/nodetests' ortMismatch); they still count as failed.
var corpusErrors = map[string]string{
	"TestMaxunpoolExportWithOutputShape": "the expected y contradicts the indices input; ONNX Runtime computes what backend does",
}

// opCount is one row of the conformance table.
type opCount struct {
	op     string
	counts [3]int
	notes  []string // first line of the message of each case not passed
}

// TestNodeConformance runs every ONNX node test of onnx-go v0.5.0's corpus
// and prints the counts and a table by op type (-v: every case not
// passed). It fails when fewer than conformanceFloor pass or more than
// conformanceCeiling fail; unsupported cases are not failures. With
// -conformance.write it writes CONFORMANCE.md (go generate ./backend).
func TestNodeConformance(t *testing.T) {
	cases, err := nodetests.Load() // embedded: never missing, so no skip
	if err != nil {
		t.Fatal(err)
	}
	var total [3]int
	byOp := map[string]*opCount{}
	for _, c := range cases {
		res, msg := runNodeTest(c)
		total[res]++
		oc := byOp[c.OpType]
		if oc == nil {
			oc = &opCount{op: c.OpType}
			byOp[c.OpType] = oc
		}
		oc.counts[res]++
		if res != nodePassed {
			line := firstLine(msg)
			if why, ok := corpusErrors[c.Name]; ok {
				line += " [corpus error: " + why + "]"
			}
			oc.notes = append(oc.notes, fmt.Sprintf("%s %s: %s", res, c.Name, line))
			t.Logf("%s %s: %s", strings.ToUpper(res.String()), c.Name, line)
		}
	}
	rows := make([]*opCount, 0, len(byOp))
	for _, oc := range byOp {
		rows = append(rows, oc)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].op < rows[j].op })
	table := conformanceTable(rows)
	t.Logf("ONNX node tests (element-wise): %d passed, %d failed, %d unsupported of %d (onnx-go's gorgonnx: 96 passed)\n%s",
		total[nodePassed], total[nodeFailed], total[nodeUnsupported], len(cases), table)
	if total[nodePassed] < conformanceFloor {
		t.Errorf("%d node tests pass, fewer than the floor %d", total[nodePassed], conformanceFloor)
	}
	if total[nodeFailed] > conformanceCeiling {
		t.Errorf("%d node tests fail, more than the ceiling %d", total[nodeFailed], conformanceCeiling)
	}
	notPassed := map[string][]string{}
	for _, r := range rows {
		for _, note := range r.notes {
			res, rest, _ := strings.Cut(note, " ")
			name, _, _ := strings.Cut(rest, ":")
			notPassed[r.op] = append(notPassed[r.op], name+" ("+res+")")
		}
	}
	if *writeConformance {
		if err := os.WriteFile("CONFORMANCE.md", []byte(conformanceDoc(total, len(cases), rows, table)), 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := format.Source([]byte(conformanceCasesSource(notPassed)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("conformance_cases.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if !reflect.DeepEqual(notPassed, nodeTestsNotPassed) {
		t.Errorf("conformance_cases.go is stale (the node tests not passed changed): run go generate ./backend")
	}
}

// conformanceCasesSource is the text of conformance_cases.go: the node
// tests not passed, by op, for NodeTestsNotPassed.
func conformanceCasesSource(notPassed map[string][]string) string {
	var sb strings.Builder
	sb.WriteString("// Code generated by `go generate ./backend` (TestNodeConformance -conformance.write); DO NOT EDIT.\n\n")
	sb.WriteString("package backend\n\n// nodeTestsNotPassed lists, by op type, the ONNX node tests (internal/testkit/nodetests)\n// that backend fails or does not support, with the result.\nvar nodeTestsNotPassed = map[string][]string{\n")
	ops := make([]string, 0, len(notPassed))
	for op := range notPassed {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(&sb, "\t%q: {", op)
		for i, c := range notPassed[op] {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "%q", c)
		}
		sb.WriteString("},\n")
	}
	sb.WriteString("}\n")
	return sb.String()
}

// conformanceTable is the per-op Markdown table.
func conformanceTable(rows []*opCount) string {
	var sb strings.Builder
	sb.WriteString("| op | cases | passed | failed | unsupported |\n|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d |\n", r.op, r.counts[0]+r.counts[1]+r.counts[2], r.counts[0], r.counts[1], r.counts[2])
	}
	return sb.String()
}

// conformanceDoc is the text of CONFORMANCE.md.
func conformanceDoc(total [3]int, n int, rows []*opCount, table string) string {
	var sb strings.Builder
	sb.WriteString("<!-- Code generated by `go generate ./backend` (TestNodeConformance -conformance.write); DO NOT EDIT. -->\n\n")
	sb.WriteString("# ONNX node-test conformance\n\n")
	fmt.Fprintf(&sb, "backend over the %d ONNX node tests that onnx-go %s ships (`internal/testkit/nodetests`): "+
		"**%d passed, %d failed, %d unsupported**. onnx-go's own Go backend, gorgonnx, passes 96.\n\n",
		n, nodetests.Version, total[nodePassed], total[nodeFailed], total[nodeUnsupported])
	fmt.Fprintf(&sb, "A case passes when every output has the expected shape and every element matches: "+
		"|got − want| ≤ atol + rtol·|want| with rtol %g, atol %g for float32 (ONNX's backend-test defaults), "+
		"rtol %g, atol %g for float64, exact for integer and bool outputs. It is unsupported when the model is "+
		"rejected by importer.Validate (opset older than supported), or backend reports an op it does not lower "+
		"(`*UnsupportedError`) or a documented design limit (`*LimitError`). Everything else is failed.\n\n",
		nodeRTol32, nodeATol32, nodeRTol64, nodeATol64)
	sb.WriteString("Backend computes every run-time value in one float type; integer model inputs are bound from " +
		"the batch when the graph is built (only as shapes, indices or counts), and values known at build time " +
		"are returned as constants.\n\n## By op\n\n")
	sb.WriteString(table)
	sb.WriteString("\n## Cases not passed\n\n")
	for _, r := range rows {
		for _, note := range r.notes {
			fmt.Fprintf(&sb, "- %s\n", strings.ReplaceAll(note, "\t", " "))
		}
	}
	return sb.String()
}

// firstLine flattens a (possibly multi-line) error message to one line
// without backend's prefixes.
func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for _, pre := range []string{"backend: 1 unsupported node(s): ", "backend: "} {
		s = strings.TrimPrefix(s, pre)
	}
	return s
}
