package idx

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/internal/testkit/idxtest"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	good := idxtest.Encode([]int{2, 3}, []uint8{1, 2, 3, 4, 5, 6})
	tests := []struct {
		name     string
		content  []byte
		wantDims []int
		wantErr  string
	}{
		{"raw", good, []int{2, 3}, ""},
		{"gzip", idxtest.Gzip(good), []int{2, 3}, ""},
		{"bad magic", append([]byte{1, 2}, good[2:]...), nil, "magic"},
		{"int32 type", append([]byte{0, 0, 0x0c}, good[3:]...), nil, "element type 0x0c"},
		{"zero dims", []byte{0, 0, 8, 0}, nil, "0 dimensions"},
		{"truncated data", good[:len(good)-2], nil, "need 6 bytes of data, found 4"},
		{"truncated header", good[:6], nil, "dimension 0"},
		{"empty", nil, nil, "magic"},
		{"broken gzip", idxtest.Gzip(good)[:12], nil, "ErrFormat"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			dims, data, err := Read(p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(dims, tc.wantDims) || !reflect.DeepEqual(data, []uint8{1, 2, 3, 4, 5, 6}) {
					t.Errorf("got %v %v", dims, data)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v, want an ErrFormat naming %s", err, p)
			}
			if tc.wantErr != "ErrFormat" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope")
	if _, _, err := Read(p); err == nil || !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrFormat) {
		t.Errorf("err = %v, want a not-exist error that is not ErrFormat", err)
	}
}

// TestNewReaderHeaderFirst: the dimensions of a raw or gzip stream are
// known from its header alone (a body that is not there is not read),
// and Read then gives exactly Len data bytes.
func TestNewReaderHeaderFirst(t *testing.T) {
	for _, gz := range []bool{false, true} {
		head := idxtest.Encode([]int{1000000, 28, 28}, nil)
		full := idxtest.Encode([]int{2, 3}, []uint8{1, 2, 3, 4, 5, 6, 7, 8})
		if gz {
			head, full = idxtest.Gzip(head), idxtest.Gzip(full)
		}
		rd, err := NewReader(bytes.NewReader(head))
		if err != nil {
			t.Fatalf("gzip %v: %v", gz, err)
		}
		if !reflect.DeepEqual(rd.Dims, []int{1000000, 28, 28}) || rd.Len() != 1000000*28*28 {
			t.Errorf("gzip %v: dims %v, len %d", gz, rd.Dims, rd.Len())
		}
		rd.Close()
		rd, err = NewReader(bytes.NewReader(full))
		if err != nil {
			t.Fatalf("gzip %v: %v", gz, err)
		}
		data, err := io.ReadAll(rd)
		if err != nil || !reflect.DeepEqual(data, []uint8{1, 2, 3, 4, 5, 6}) {
			t.Errorf("gzip %v: data %v, %v; want the 6 announced bytes", gz, data, err)
		}
		rd.Close()
	}
}
