package termsafe

import (
	"bytes"
	"fmt"
	"testing"
)

func TestName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"conv1.weight", "conv1.weight"},
		{"naïve/日本", "naïve/日本"},
		{"\x1b[31mRED\x1b]0;TITLE\x07", `\x1b[31mRED\x1b]0;TITLE\a`},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"bad\xff\xc2", `bad\xff\xc2`},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Name(tc.in); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Name writes what %q writes between the quotes.
		if q := fmt.Sprintf("%q", tc.in); q[1:len(q)-1] != tc.want {
			t.Errorf("%%q of %q = %s, Name = %s", tc.in, q, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	in := "2 problems:\n\tnode \"\x1b[2J\" (\x07Op): bad\r\n"
	want := "2 problems:\n\tnode \"\\x1b[2J\" (\\aOp): bad\\r\n"
	if got := Text(in); got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	if n, err := fmt.Fprintf(w, "%s\n", "x\x1b]0;T\x07"); err != nil || n != len("x\x1b]0;T\x07\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != "x\\x1b]0;T\\a\n" {
		t.Errorf("Writer wrote %q", got)
	}
}
