package proto

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path       string
		sequential bool
		wantErr    string // substring of the error; "" for valid
	}{
		{"/", false, ""},
		{"/a", false, ""},
		{"/a/b-c_d.e", false, ""},
		{"/zookeeper/quota", false, ""},
		{"/...", false, ""},
		{"/a/.b", false, ""},
		{"/a/b.", false, ""},
		{"/a/..b", false, ""},
		{"/é/日本", false, ""},
		{"/a b", false, ""},
		{"/\u00a0", false, ""}, // first allowed character after the C1 block
		{"/\uf900", false, ""}, // first allowed after the private use area
		{"/\uffef", false, ""}, // last allowed before the specials block
		{"", false, "path is empty"},
		{"a", false, "must start with /"},
		{"a/b", false, "must start with /"},
		{"/a/", false, "must not end with /"},
		{"//", false, "must not end with /"},
		{"//a", false, "empty node name at byte 1"},
		{"/a//b", false, "empty node name at byte 3"},
		{"/.", false, `relative segment "."`},
		{"/..", false, `relative segment ".."`},
		{"/a/./b", false, `relative segment "." at byte 3`},
		{"/a/../b", false, `relative segment ".."`},
		{"/a/..", false, `relative segment ".."`},
		{"/a\x00b", false, "NUL character at byte 2"},
		{"/a\x01", false, "U+0001"},
		{"/a\x1f", false, "U+001F"},
		{"/a\x7f", false, "U+007F"},
		{"/a\u0085", false, "U+0085"},
		{"/a\u009f", false, "U+009F"},
		{"/a\ue000", false, "U+E000"},
		{"/a\uf8ff", false, "U+F8FF"},
		{"/a\ufff0", false, "U+FFF0"},
		{"/a\ufffd", false, "U+FFFD"},
		{"/a\U0001F600", false, "U+1F600"},
		{"/a\xff", false, "invalid UTF-8 at byte 2"},
		{"/a\xed\xa0\x80", false, "invalid UTF-8"}, // an encoded surrogate
		// Sequential: the server appends the counter, so a trailing slash
		// or a final "." / ".." becomes a valid name.
		{"/", true, ""},
		{"/q/", true, ""},
		{"/q/item-", true, ""},
		{"/q/.", true, ""},
		{"/q/..", true, ""},
		{"", true, "must start with /"},
		{"q/", true, "must start with /"},
		{"/q//", true, "empty node name"},
		{"/q/./", true, `relative segment "."`},
		{"/q\x00/", true, "NUL character"},
	}
	for _, tc := range tests {
		err := ValidatePath(tc.path, tc.sequential)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidatePath(%q, %v) = %v, want nil", tc.path, tc.sequential, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("ValidatePath(%q, %v) = nil, want error containing %q", tc.path, tc.sequential, tc.wantErr)
		case tc.wantErr != "" && !errors.Is(err, ErrInvalidPath):
			t.Errorf("ValidatePath(%q, %v) = %v, does not wrap ErrInvalidPath", tc.path, tc.sequential, err)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("ValidatePath(%q, %v) = %v, want error containing %q", tc.path, tc.sequential, err, tc.wantErr)
		}
		if ref := javaPathValid(tc.path, tc.sequential); ref != (err == nil) {
			t.Errorf("ValidatePath(%q, %v) valid=%v but the UTF-16 reference says %v", tc.path, tc.sequential, err == nil, ref)
		}
	}
}

func TestValidatePathErrorNamesPath(t *testing.T) {
	err := ValidatePath("/a//b", false)
	if err == nil || !strings.Contains(err.Error(), `"/a//b"`) {
		t.Errorf("error %v does not quote the path", err)
	}
}

// javaPathValid is an independent model of ZooKeeper's check, written
// against what Java sees: the path as UTF-16 code units after UTF-8
// decoding (where every malformed byte becomes U+FFFD). Only the verdict is
// compared, not the message.
func javaPathValid(path string, sequential bool) bool {
	if sequential {
		path += "1"
	}
	u := utf16.Encode([]rune(path))
	n := len(u)
	if n == 0 || u[0] != '/' {
		return false
	}
	if n == 1 {
		return true
	}
	if u[n-1] == '/' {
		return false
	}
	at := func(i int) uint16 { // code unit i, or '/' past either end
		if i < 0 || i >= n {
			return '/'
		}
		return u[i]
	}
	for i := 1; i < n; i++ {
		c := u[i]
		switch {
		case c == 0:
			return false
		case c == '/' && at(i-1) == '/':
			return false
		case c == '.' && at(i-1) == '/' && at(i+1) == '/':
			return false // "."
		case c == '.' && at(i-1) == '.' && at(i-2) == '/' && at(i+1) == '/':
			return false // ".."
		case c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return false
		}
	}
	return true
}
