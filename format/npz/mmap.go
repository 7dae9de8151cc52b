package npz

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/paretonav/paretonav/importer"
)

// MapMinBytes is the least data size of an array that Read and ReadNPY
// map from its file instead of decoding: float32 little-endian arrays in
// C order, in a .npy file or a stored (uncompressed) NPZ member, whose
// data start at a multiple of 4 bytes. The tensor's F32 then lies in
// read-only memory the kernel pages in as batches read it and may drop
// again under memory pressure, so a data set larger than memory trains;
// it takes nothing from ReadOptions.MaxBytes (Mapped reports it).
// Writing into such a tensor faults: tensors from Read are read-only.
var MapMinBytes int64 = 1 << 20

// mapped holds the first element's address of every mapped tensor's
// F32.
var mapped sync.Map

// Mapped reports whether t's values are mapped from a file (see
// MapMinBytes) rather than held in memory.
func Mapped(t *importer.Tensor) bool {
	if t == nil || len(t.F32) == 0 {
		return false
	}
	_, ok := mapped.Load(&t.F32[0])
	return ok
}

// mapArray maps the .npy stream at offset off of f (size bytes long in
// all) when it holds a float32 little-endian C-order array of at least
// MapMinBytes whose data are 4-byte aligned; ok is false otherwise (the
// caller decodes it).
func mapArray(f *os.File, off, size int64, name string) (t *importer.Tensor, ok bool) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 12+maxHeader)
	pre, err := br.Peek(12)
	if err != nil {
		return nil, false
	}
	h, err := readHeader(br)
	if err != nil || h.Descr.Fortran {
		return nil, false
	}
	if d := h.Descr.Type; d != "<f4" && d != "=f4" {
		return nil, false
	}
	hlen := 10 + int64(binary.LittleEndian.Uint16(pre[8:]))
	if pre[6] != 1 {
		hlen = 12 + int64(binary.LittleEndian.Uint32(pre[8:]))
	}
	n := int64(1)
	for _, s := range h.Descr.Shape {
		if s < 0 || s > 0 && n > (1<<40)/int64(s) {
			return nil, false
		}
		n *= int64(s)
	}
	start := off + hlen
	if n*4 < MapMinBytes || start%4 != 0 || start+4*n > size {
		return nil, false
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(start+4*n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, false
	}
	vals := unsafe.Slice((*float32)(unsafe.Pointer(&mem[start])), n)
	mapped.Store(&vals[0], true)
	mappedBytes.Add(4 * n)
	return &importer.Tensor{Name: name, Type: importer.Float32, Shape: append([]int{}, h.Descr.Shape...), F32: vals}, true
}

// storedOffsets lists the stored (uncompressed) members of the zip at
// path by name, with the offset of their data in the file.
func storedOffsets(path string) map[string]int64 {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil
	}
	defer zr.Close()
	out := map[string]int64{}
	for _, f := range zr.File {
		if f.Method != zip.Store {
			continue
		}
		if off, err := f.DataOffset(); err == nil {
			out[f.Name] = off
		}
	}
	return out
}

// mappedBytes is the size of every array mapped so far.
var mappedBytes atomic.Int64

// MappedBytes is the size of the arrays mapped from files so far (see
// MapMinBytes): their pages count in the process's resident memory while
// the kernel keeps them, file-backed and dropped again under pressure.
func MappedBytes() int64 { return mappedBytes.Load() }
