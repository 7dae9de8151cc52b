package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestAdvise checks that Advise marks a large buffer for huge pages: the
// kernel lists the mapping holding its aligned interior with the "hg"
// flag (VmFlags in /proc/self/smaps); and that empty and small buffers
// are left alone without a fault.
func TestAdvise(t *testing.T) {
	Advise([]float32(nil))
	Advise(make([]byte, 100))
	if runtime.GOOS != "linux" {
		t.Skip("madvise(MADV_HUGEPAGE) is Linux's; elsewhere Advise does nothing")
	}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("this kernel has no transparent huge pages: %v", err)
	}
	buf := make([]float32, 8<<20) // 32 MB
	Advise(buf)
	start := uintptr(unsafe.Pointer(&buf[0]))
	probe := (start + pageSize - 1) &^ (pageSize - 1) // first aligned page
	flags, err := vmFlags(probe)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("mapping at %#x: VmFlags %q, want hg (MADV_HUGEPAGE)", probe, flags)
	}
	runtime.KeepAlive(buf)
}

// vmFlags returns the VmFlags line of the mapping of /proc/self/smaps
// that holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping of /proc/self/smaps holds %#x", addr)
}
