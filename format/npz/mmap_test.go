package npz

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/paretonav/paretonav/importer"
)

// TestMapped: a float32 array of at least MapMinBytes in a .npy file, or
// in a stored NPZ member whose data are aligned, is mapped from the file
// (same values, Mapped true, nothing taken from MaxBytes); a compressed
// member, a float64 or a small array is decoded.
func TestMapped(t *testing.T) {
	dir := t.TempDir()
	n := int(MapMinBytes/4) + 1000
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = rng.Float32()
	}
	big := importer.NewFloat32("x", []int{n / 8, 8}, vals[:n/8*8])
	small := importer.NewFloat32("s", []int{4}, []float32{1, 2, 3, 4})
	wide := &importer.Tensor{Name: "d", Type: importer.Float64, Shape: []int{n / 8, 8}, F64: make([]float64, n/8*8)}
	npy := filepath.Join(dir, "x.npy")
	if err := WriteNPY(npy, big); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPYWithin(npy, 1000, "--max-memory 1000")
	if err != nil {
		t.Fatalf("ReadNPYWithin under a 1000-byte bound: %v", err)
	}
	check := func(what string, got *importer.Tensor, wantMapped bool) {
		t.Helper()
		if Mapped(got) != wantMapped {
			t.Errorf("%s: Mapped = %v, want %v", what, Mapped(got), wantMapped)
		}
		if got.Name == "x" {
			for i, v := range big.F32 {
				if got.F32[i] != v {
					t.Fatalf("%s: value %d is %v, want %v", what, i, got.F32[i], v)
				}
			}
		}
	}
	check(".npy", got, true)
	if _, err := ReadNPYWithin(npy, 1000, "test"); err != nil {
		t.Errorf("a mapped array counted against the bound: %v", err)
	}
	// A stored member's data start wherever the zip puts them: names of
	// four lengths put them at four offsets, one of them aligned.
	nMapped := 0
	for _, name := range []string{"a", "ab", "abc", "abcd"} {
		for _, compress := range []bool{false, true} {
			p := filepath.Join(dir, fmt.Sprintf("%s_%v.npz", name, compress))
			x := *big
			x.Name = name
			if err := WriteOptions(p, map[string]*importer.Tensor{name: &x, "s": small, "d": wide}, Options{Compress: compress}); err != nil {
				t.Fatal(err)
			}
			out, err := ReadSelect(p, ReadOptions{MaxBytes: 2 * int64(len(wide.F64)) * 8, From: "test"})
			if err != nil {
				t.Fatal(err)
			}
			want := !compress && dataAligned(t, p, name+".npy")
			if got := Mapped(out[name]); got != want {
				t.Errorf("%s: %s mapped %v, want %v (data aligned: %v)", p, name, got, want, want)
			}
			for i, v := range big.F32 {
				if out[name].F32[i] != v {
					t.Fatalf("%s: value %d is %v, want %v", p, i, out[name].F32[i], v)
				}
			}
			if Mapped(out["s"]) || Mapped(out["d"]) {
				t.Errorf("%s: a small or float64 array mapped", p)
			}
			if want {
				nMapped++
			}
		}
	}
	if nMapped == 0 {
		t.Errorf("no stored member was mapped")
	}
}

// dataAligned reports whether the array data of the stored member key of
// the archive at path start at a multiple of 4 bytes in the file.
func dataAligned(t *testing.T, path, key string) bool {
	t.Helper()
	off, ok := storedOffsets(path)[key]
	if !ok {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pre := make([]byte, 12)
	if _, err := f.ReadAt(pre, off); err != nil {
		t.Fatal(err)
	}
	hlen := 10 + int64(binary.LittleEndian.Uint16(pre[8:]))
	if pre[6] != 1 {
		hlen = 12 + int64(binary.LittleEndian.Uint32(pre[8:]))
	}
	return (off+hlen)%4 == 0
}
