package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// importRule forbids the packages matching from (minus except) to import
// directly any package matching forbid or forbidOther. Packages of this
// module are written relative to the module root ("." is the root), other
// packages by their import path; see match for the "/..." patterns.
type importRule struct {
	from   []string
	except []string
	// forbid names packages of this module; forbidOther, packages outside
	// it (the standard library, third parties).
	forbid      []string
	forbidOther []string
	// tests extends the rule to the packages' test files (internal and
	// external); otherwise only the package's own files count.
	tests bool
	why   string
}

// importRules are the module's dependency rules (docs/design.md, section 3): cli → batch → job → finetune → backend →
// png → importer, with models and bench beside job, the file formats (format) just above importer, the run-time helpers
// (internal, but internal/testkit) leaves every layer may use, and the test harnesses (internal/testkit) for tests
// only.
var importRules = []importRule{
	{
		from:        []string{"..."},
		except:      []string{"backend/..."},
		forbidOther: []string{"gorgonia.org/gorgonia/...", "gorgonia.org/tensor/..."},
		tests:       true,
		why: "Gorgonia and its traps (docs/design.md, section 6) stay behind backend's small " +
			"losses-and-gradients interface; everything else reaches it only through backend",
	},
	{
		from:   []string{"png/..."},
		forbid: []string{"importer/...", "format/...", "backend/...", "finetune/...", "cli/...", "models/..."},
		why: "png is the math: plain slices and small structs, driven by backend " +
			"and synthetic problems alike without knowing either",
	},
	{
		from:        []string{"png/..."},
		forbidOther: []string{"os", "os/...", "net", "net/...", "io/fs", "io/ioutil"},
		why:         "png does no file or network I/O: callers bring data in and take results out",
	},
	{
		from:   []string{"importer/..."},
		forbid: []string{"png/...", "format/...", "backend/...", "finetune/...", "cli/...", "models/..."},
		why:    "importer is the lowest layer (ONNX protobuf in and out); everything else builds on it",
	},
	{
		from: []string{"format/..."},
		forbid: []string{"png/...", "backend/...", "finetune/...", "models/...", "job/...", "batch/...", "bench/...",
			"cli/..."},
		why: "format holds the data file formats (NPZ, NPY, IDX) on top of importer's tensors, for every layer " +
			"that reads or writes data files, the test harnesses included",
	},
	{
		from:   []string{"backend/..."},
		forbid: []string{"finetune/...", "cli/..."},
		why:    "backend computes losses and gradients; the training loop and the command line drive it from above",
	},
	{
		from:   []string{"png/...", "importer/...", "format/...", "backend/...", "finetune/...", "models/..."},
		forbid: []string{"job/...", "batch/...", "bench/..."},
		why: "job and bench run the commands' work on top of the libraries; the libraries do not know about " +
			"jobs or benchmarks",
	},
	{
		from:   []string{"finetune/..."},
		forbid: []string{"models/..."},
		why: "finetune trains any problem and knows no reference model (its tests use models/synthetic); " +
			"the applications (bench, cli) bring the two together",
	},
	{
		from:   []string{"bench/..."},
		forbid: []string{"job/...", "batch/..."},
		why:    "bench, the paper's benchmarks, is an application beside job built on the libraries, not on jobs",
	},
	{
		from:   []string{"..."},
		except: []string{".", "cli/...", "bench/..."},
		forbid: []string{"bench/..."},
		why:    "bench is an application: only the command line runs it",
	},
	{
		from:   []string{"job/..."},
		forbid: []string{"batch/..."},
		why:    "batch runs many jobs; one job knows nothing of batches",
	},
	{
		from:   []string{"batch/..."},
		forbid: []string{"cli/..."},
		why:    "batch is a library (jobs files, out folders, cluster scripts); flags and printing are cli's",
	},
	{
		from:   []string{"job/..."},
		forbid: []string{"cli/..."},
		why:    "job is a library shared by the commands and batch runs; flags and printing are cli's",
	},
	{
		from:   []string{"finetune/..."},
		forbid: []string{"cli/..."},
		why:    "finetune is a library; printing, flags and files of the command line are cli's",
	},
	{
		from:   []string{"models/synthetic"},
		forbid: []string{"backend/...", "cli/..."},
		why: "synthetic problems implement the same losses-and-gradients interface " +
			"as backend, in plain Go, so png and finetune can be tested without ONNX",
	},
	{
		from:   []string{"models/..."},
		forbid: []string{"cli/..."},
		why:    "reference models and data sets are libraries the command line uses, not the other way round",
	},
	// Inside backend, each floor imports only the floors below it: the
	// model (backend) over the op lowerings (onnxops) and the loss heads
	// (loss), over the graph builder and registry (graph), over the
	// kernels (kernels, gemm, vmath); rewrite, shape and parallel are
	// leaves any floor may use (docs/design.md, section 3).
	{
		from:   []string{"backend/internal/kernels", "backend/internal/gemm", "backend/internal/vmath", "backend/internal/wrap"},
		forbid: []string{"backend", "backend/internal/graph", "backend/internal/onnxops", "backend/internal/loss", "backend/internal/rewrite", "backend/internal/onnxtest"},
		why:    "the kernels are numeric code on slices and Gorgonia's op interface: the graph, its lowerings, the losses and the model build on them, never the reverse",
	},
	{
		from:   []string{"finetune/internal/stepvec"},
		forbid: []string{"finetune", "finetune/front", "finetune/metrics", "png/...", "backend/...", "importer/...", "format/..."},
		why:    "the optimizer step's per-weight kernels work on plain slices: the training loop builds on them, never the reverse",
	},
	{
		from:   []string{"internal/cpu"},
		forbid: []string{"backend/...", "png/...", "finetune/...", "importer/..."},
		why:    "the CPU's vector features are a leaf that the assembly kernels of backend, png and finetune read",
	},
	{
		from:   []string{"backend/internal/shape", "backend/internal/parallel", "backend/internal/rewrite"},
		forbid: []string{"backend/..."},
		why:    "shape arithmetic, loop splitting and the graph rewrites (which see the ONNX graph alone, before anything is lowered) are leaves every floor of backend may use",
	},
	{
		from:   []string{"backend/internal/graph"},
		forbid: []string{"backend", "backend/internal/onnxops", "backend/internal/loss", "backend/internal/onnxtest"},
		why:    "the graph builder, its values and its registry know no op family, no loss kind and no model: those register with it or drive it",
	},
	{
		from:   []string{"backend/internal/onnxops", "backend/internal/loss"},
		forbid: []string{"backend", "backend/internal/onnxops", "backend/internal/loss", "backend/internal/onnxtest"},
		why:    "an op lowering and a loss head build on the graph and the kernels; neither knows the other or the model that assembles them",
	},
	{
		from:   []string{"..."},
		forbid: []string{"backend/internal/onnxtest"},
		why:    "onnxtest builds models for tests: only test files import it",
	},
	{
		from:   []string{"internal/..."},
		except: []string{"internal/testkit/..."},
		forbid: []string{"..."},
		why: "internal's run-time helpers (atomicfile, par, hugepages, smallfile, termsafe) are leaves " +
			"that every layer, importer included, may use",
	},
	{
		from:   []string{"..."},
		except: []string{"internal/testkit/..."},
		forbid: []string{"internal/testkit/..."},
		why: "internal/testkit holds the test harnesses (ONNX Runtime, the node-test corpus, Slurm, the " +
			"architecture checks): only test files import them, never the code a user runs",
	},
	{
		from:   []string{"..."},
		except: []string{".", "cli/..."},
		forbid: []string{"cli/..."},
		why:    "cli is the top of the graph: only the paretonav main program imports it",
	},
}

// importsOf returns p's direct imports that rule r looks at: those of this
// module (module-relative) and the others.
func importsOf(p listedPackage, r importRule) (local, other []string) {
	imps := slices.Clone(p.Imports)
	if r.tests {
		imps = append(imps, p.TestImports...)
		imps = append(imps, p.XTestImports...)
	}
	slices.Sort(imps)
	for _, imp := range slices.Compact(imps) {
		if imp == modulePath || strings.HasPrefix(imp, modulePath+"/") {
			local = append(local, rel(imp))
		} else {
			other = append(other, imp)
		}
	}
	return local, other
}

// violations lists every import that breaks one of rules, one line each.
func violations(pkgs []listedPackage, rules []importRule) []string {
	var out []string
	for _, r := range rules {
		for _, p := range pkgs {
			from := rel(p.ImportPath)
			if !matchAny(r.from, from) || matchAny(r.except, from) {
				continue
			}
			local, other := importsOf(p, r)
			for _, imp := range local {
				if imp != from && matchAny(r.forbid, imp) { // an external test imports its own package
					out = append(out, fmt.Sprintf("%s imports %s: %s", from, imp, r.why))
				}
			}
			for _, imp := range other {
				if matchAny(r.forbidOther, imp) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", from, imp, r.why))
				}
			}
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, v := range violations(pkgs, importRules) {
		t.Error(v)
	}
}

// TestImportRulesNotVacuous fails when a rule names a package of this
// module that no longer exists (after a rename, say), which would make the
// rule silently check nothing.
func TestImportRulesNotVacuous(t *testing.T) {
	pkgs := listPackages(t)
	local := make([]string, len(pkgs))
	for i, p := range pkgs {
		local[i] = rel(p.ImportPath)
	}
	exists := func(pattern string) bool {
		return slices.ContainsFunc(local, func(p string) bool { return match(pattern, p) })
	}
	for i, r := range importRules {
		for _, pat := range slices.Concat(r.from, r.except) {
			if !exists(pat) {
				t.Errorf("rule %d (%s): pattern %q matches no package of the module", i, r.why, pat)
			}
		}
		for _, pat := range r.forbid {
			if !exists(pat) {
				t.Errorf("rule %d (%s): forbidden %q matches no package of the module", i, r.why, pat)
			}
		}
	}
}

// TestViolationsFindsBreaks checks the checker on invented packages: each
// row must be reported, and an allowed import must not be.
func TestViolationsFindsBreaks(t *testing.T) {
	// pkg makes a package of this module; local imports are given
	// module-relative, others with a leading "!".
	pkg := func(path string, imports ...string) listedPackage {
		for i, imp := range imports {
			if other, ok := strings.CutPrefix(imp, "!"); ok {
				imports[i] = other
			} else {
				imports[i] = modulePath + "/" + imp
			}
		}
		return listedPackage{ImportPath: modulePath + "/" + path, Imports: imports}
	}
	bad := []listedPackage{
		pkg("finetune", "!gorgonia.org/gorgonia"),
		pkg("png/criterion", "!os"),
		pkg("png", "importer"),
		pkg("importer", "backend"),
		pkg("backend/internal/kernels", "finetune"),
		pkg("format/npz", "cli"),
		pkg("format/npz", "backend"),
		pkg("importer", "format/npz"),
		pkg("finetune", "models/datasets"),
		pkg("bench", "job"),
		pkg("job", "bench"),
		pkg("models", "bench"),
		pkg("backend", "internal/testkit/ortcheck"),
		pkg("internal/par", "png"),
		pkg("models/synthetic", "backend"),
		pkg("png/pareto", "!io/fs"),
		pkg("models/datasets", "cli"),
		pkg("internal/atomicfile", "importer"),
		{ImportPath: modulePath + "/models", XTestImports: []string{"gorgonia.org/tensor"}},
		pkg("backend/internal/kernels", "backend/internal/graph"),
		pkg("backend/internal/gemm", "backend"),
		pkg("backend/internal/rewrite", "backend/internal/graph"),
		pkg("backend/internal/shape", "backend/internal/kernels"),
		pkg("backend/internal/graph", "backend/internal/onnxops"),
		pkg("backend/internal/onnxops", "backend/internal/loss"),
		pkg("backend/internal/loss", "backend"),
		pkg("backend", "backend/internal/onnxtest"),
		pkg("finetune/internal/stepvec", "finetune"),
	}
	for _, p := range bad {
		if v := violations([]listedPackage{p}, importRules); len(v) == 0 {
			t.Errorf("%s importing %v: no violation reported", p.ImportPath, slices.Concat(p.Imports, p.XTestImports))
		}
	}
	good := []listedPackage{
		pkg("backend", "!gorgonia.org/gorgonia", "importer", "png"),
		pkg("finetune", "png", "importer", "!os"),
		pkg("cli", "finetune", "backend", "models"),
		{ImportPath: modulePath, Imports: []string{modulePath + "/cli"}},
		pkg("internal/atomicfile", "!os", "!bufio"),
		pkg("format/npz", "importer", "internal/atomicfile"),
		pkg("backend", "format/npz"),
		pkg("bench", "finetune", "models", "backend"),
		pkg("cli", "bench"),
		pkg("internal/testkit/interop", "internal/testkit/ortcheck", "backend", "batch"),
		{ImportPath: modulePath + "/backend", TestImports: []string{modulePath + "/internal/testkit/ortcheck"}},
		pkg("backend", "backend/internal/onnxops", "backend/internal/loss", "backend/internal/graph"),
		pkg("backend/internal/onnxops", "backend/internal/graph", "backend/internal/kernels", "backend/internal/rewrite"),
		pkg("backend/internal/kernels", "backend/internal/gemm", "backend/internal/vmath"),
		pkg("finetune", "finetune/internal/stepvec"),
		pkg("finetune/internal/stepvec", "internal/cpu"),
		{ImportPath: modulePath + "/backend/internal/onnxops", TestImports: []string{modulePath + "/backend/internal/onnxtest"}},
	}
	for _, p := range good {
		if v := violations([]listedPackage{p}, importRules); len(v) != 0 {
			t.Errorf("%s: unexpected violations %v", p.ImportPath, v)
		}
	}
}
