package datasets

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/paretonav/paretonav/importer"
)

// Kind selects the sources of a two-item dataset.
type Kind string

// The datasets of Lin et al. 2019 (Pareto MTL), reused by EPO and PNG.
const (
	// MultiMNIST: two MNIST digits.
	MultiMNIST Kind = "multimnist"
	// MultiFashion: two Fashion-MNIST items.
	MultiFashion Kind = "multifashion"
	// FashionMNIST is Multi-(Fashion+MNIST): a Fashion-MNIST item at the
	// top left (the left task) and an MNIST digit at the bottom right (the
	// right task).
	FashionMNIST Kind = "fashionmnist"
)

// Kinds lists every Kind, in the order the CLI shows them.
var Kinds = []Kind{MultiMNIST, MultiFashion, FashionMNIST}

// Geometry of the composed images: a 36×36 canvas, the left item's 28×28
// image at offset (0,0) (top left), the right item's at (RightOffset,
// RightOffset) (bottom right), overlapping pixels combined by maximum.
// LayoutSener moves the right item to (SenerRightOffset, SenerRightOffset).
const (
	Canvas           = 36
	RightOffset      = 8
	SenerRightOffset = 6
)

// Layout selects where the right item goes and how the pairs are drawn.
type Layout string

// The layouts Compose knows.
const (
	// LayoutOurs (the default) puts the right item at (RightOffset,
	// RightOffset) and draws both items of every pair uniformly, with
	// replacement.
	LayoutOurs Layout = "ours"
	// LayoutSener is the construction of Sener & Koltun (2018), whose
	// MultiMNIST Pareto MTL's pickles follow, kept at 36×36 as those
	// pickles are: the right item at (SenerRightOffset, SenerRightOffset),
	// so that rows and columns 34 and 35 stay blank and the items overlap
	// over 22×22 pixels instead of 20×20; the left item of example k is
	// source image k mod N (every image in turn, in file order), the right
	// one drawn uniformly with replacement (it may be the same image).
	// A limit below the source's size therefore takes its first images as
	// the left items.
	// Sener & Koltun then shrink the 36×36 image to 28×28 (nearest
	// neighbour); Pareto MTL's 36×36 pickles do not, and neither does this.
	LayoutSener Layout = "sener"
)

// Layouts lists every Layout, the default first.
var Layouts = []Layout{LayoutOurs, LayoutSener}

// ParseLayout returns the Layout named s, or an error listing Layouts.
func ParseLayout(s string) (Layout, error) {
	l := Layout(s)
	if !slices.Contains(Layouts, l) {
		return "", fmt.Errorf("%q: want one of %v", s, Layouts)
	}
	return l, nil
}

// rightOffset returns the right item's offset of layout l.
func (l Layout) rightOffset() (int, error) {
	switch l {
	case LayoutOurs, "":
		return RightOffset, nil
	case LayoutSener:
		return SenerRightOffset, nil
	}
	return 0, fmt.Errorf("datasets: layout %q: want one of %v", string(l), Layouts)
}

// Default sizes: 120,000 training and 20,000 test pairs, as in Lin et al.
const (
	DefaultTrainSize = 120000
	DefaultTestSize  = 20000
)

// Options control Multi. The zero value builds the full training split
// with seed 0.
type Options struct {
	// Split is Train (default) or Test. Training pairs are drawn from the
	// sources' 60,000 training images, test pairs from their 10,000 test
	// images.
	Split Split
	// Limit, if positive, caps the number of pairs (default
	// DefaultTrainSize or DefaultTestSize). The pairs of a smaller limit
	// are a prefix of those of a larger one with the same seed.
	Limit int
	// Seed fixes which source images are paired.
	Seed int64
	// Layout is LayoutOurs (default) or LayoutSener.
	Layout Layout
}

// Multi loads the sources of kind and composes its dataset (see Compose).
func Multi(kind Kind, opt Options) (map[string]*importer.Tensor, error) {
	if opt.Split == "" {
		opt.Split = Train
	}
	if _, err := opt.Split.prefix(); err != nil {
		return nil, err
	}
	if _, err := opt.Layout.rightOffset(); err != nil {
		return nil, err
	}
	var loadLeft, loadRight func(Split) (*Set, error)
	switch kind {
	case MultiMNIST:
		loadLeft, loadRight = LoadMNIST, LoadMNIST
	case MultiFashion:
		loadLeft, loadRight = LoadFashion, LoadFashion
	case FashionMNIST:
		loadLeft, loadRight = LoadFashion, LoadMNIST
	default:
		return nil, fmt.Errorf("datasets: kind %q: want one of %v", string(kind), Kinds)
	}
	left, err := loadLeft(opt.Split)
	if err != nil {
		return nil, err
	}
	right := left
	if kind == FashionMNIST {
		if right, err = loadRight(opt.Split); err != nil {
			return nil, err
		}
	}
	n := DefaultTrainSize
	if opt.Split == Test {
		n = DefaultTestSize
	}
	if opt.Limit > 0 && opt.Limit < n {
		n = opt.Limit
	}
	return ComposeLayout(left, right, n, opt.Seed, opt.Layout)
}

// Compose builds n two-item examples. Example k pairs left image i and
// right image j, both drawn uniformly (with replacement) by a PCG
// generator seeded with seed, in the order i₀, j₀, i₁, j₁, …; the left
// image goes at the top left of a Canvas×Canvas image and the right one at
// offset (RightOffset, RightOffset), overlaps taking the brighter pixel.
// It returns "x" [n,1,36,36] float32 (pixels/255, in [0,1]) and "left",
// "right" [n] int64 labels.
func Compose(left, right *Set, n int, seed int64) (map[string]*importer.Tensor, error) {
	return ComposeLayout(left, right, n, seed, LayoutOurs)
}

// ComposeLayout is Compose with the right item's offset and the pairing of
// layout (see Layout). With LayoutSener, left image k mod left.Len() and a
// right image drawn by the same generator make example k.
func ComposeLayout(left, right *Set, n int, seed int64, layout Layout) (map[string]*importer.Tensor, error) {
	off, err := layout.rightOffset()
	if err != nil {
		return nil, err
	}
	for _, s := range []*Set{left, right} {
		if s.Len() == 0 {
			return nil, fmt.Errorf("datasets: compose: empty source set")
		}
		if s.Images.Rows+off > Canvas || s.Images.Cols+off > Canvas {
			return nil, fmt.Errorf("datasets: compose: %dx%d images do not fit a %dx%d canvas at offset %d",
				s.Images.Rows, s.Images.Cols, Canvas, Canvas, off)
		}
	}
	if n < 1 {
		return nil, fmt.Errorf("datasets: compose: %d examples: want at least 1", n)
	}
	const plane = Canvas * Canvas
	x := make([]float32, n*plane)
	ll := make([]int64, n)
	rl := make([]int64, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d756c74696d6e73)) // "multimns"
	canvas := make([]uint8, plane)
	for k := range n {
		i := k % left.Len()
		if layout != LayoutSener {
			i = rng.IntN(left.Len())
		}
		j := rng.IntN(right.Len())
		clear(canvas)
		paste(canvas, left.Images, i, 0)
		paste(canvas, right.Images, j, off)
		dst := x[k*plane : (k+1)*plane]
		for p, v := range canvas {
			dst[p] = float32(v) / 255
		}
		ll[k] = int64(left.Labels[i])
		rl[k] = int64(right.Labels[j])
	}
	return map[string]*importer.Tensor{
		"x":     importer.NewFloat32("x", []int{n, 1, Canvas, Canvas}, x),
		"left":  importer.NewInt64("left", []int{n}, ll),
		"right": importer.NewInt64("right", []int{n}, rl),
	}, nil
}

// paste writes image i of im into canvas at (off, off), keeping the
// maximum where pixels are already set.
func paste(canvas []uint8, im *Images, i, off int) {
	src := im.At(i)
	for r := range im.Rows {
		row := canvas[(r+off)*Canvas+off:]
		for c, v := range src[r*im.Cols : (r+1)*im.Cols] {
			row[c] = max(row[c], v)
		}
	}
}
