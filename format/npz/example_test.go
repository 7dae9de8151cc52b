package npz_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/paretonav/paretonav/format/npz"
	"github.com/paretonav/paretonav/importer"
)

func Example() {
	dir, err := os.MkdirTemp("", "npz-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.npz")

	err = npz.Write(path, map[string]*importer.Tensor{
		"x":    importer.NewFloat32("x", []int{2, 3}, []float32{0, 0.5, 1, 1, 0.5, 0}),
		"left": importer.NewInt64("left", []int{2}, []int64{7, 3}),
	})
	if err != nil {
		log.Fatal(err)
	}
	arrays, err := npz.Read(path)
	if err != nil {
		log.Fatal(err)
	}
	x, left := arrays["x"], arrays["left"]
	fmt.Println(x.Type, x.Shape, x.F32)
	fmt.Println(left.Type, left.Shape, left.I64)
	// Output:
	// FLOAT [2 3] [0 0.5 1 1 0.5 0]
	// INT64 [2] [7 3]
}
