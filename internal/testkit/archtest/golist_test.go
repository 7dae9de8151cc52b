package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is the module whose packages the tests check.
const modulePath = "github.com/paretonav/paretonav"

// moduleRoot is the module's root folder relative to this package.
var moduleRoot = filepath.Join("..", "..", "..")

// listedPackage is the part of `go list -json` output the tests read.
type listedPackage struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rel names a package of this module relative to the module root ("." for
// the root itself) and leaves any other import path as it is.
func rel(importPath string) string {
	if importPath == modulePath {
		return "."
	}
	if r, ok := strings.CutPrefix(importPath, modulePath+"/"); ok {
		return r
	}
	return importPath
}

// listPackages runs `go list -json ./...` at the module root and decodes
// its stream of package objects.
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-json", "./...")
	cmd.Dir = moduleRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list -json ./... listed no packages")
	}
	return pkgs
}

// match reports whether a module-relative package path (or an external
// import path) matches pattern: "x/..." matches x and everything below it,
// "..." matches everything, and any other pattern only itself.
func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// matchAny reports whether path matches one of patterns.
func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}
