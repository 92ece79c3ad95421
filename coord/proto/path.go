package proto

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath reports a znode path that ZooKeeper would refuse. Servers
// answer it with ErrBadArguments.
var ErrInvalidPath = errors.New("proto: invalid path")

// ValidatePath checks path by the rules of ZooKeeper's PathUtils.validatePath:
// it starts with "/", does not end with "/" (unless it is the root), has no
// empty, "." or ".." segments, and holds no NUL and no character in
// U+0001–U+001F, U+007F–U+009F, U+D800–U+F8FF or U+FFF0–U+FFFF. Characters
// beyond U+FFFF are refused too, because Java sees them as surrogate pairs;
// so are bytes that are not UTF-8, which Java decodes to U+FFFD.
//
// With sequential set the path is checked as if the sequence suffix were
// already appended, so "/queue/" is valid (the server will create
// "/queue/0000000001").
//
// The error wraps ErrInvalidPath and names the problem and its byte offset.
func ValidatePath(path string, sequential bool) error {
	p := path
	if sequential {
		p += "1" // any suffix char stands in for the digits the server appends
	}
	if reason := pathProblem(p); reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidPath, path, reason)
	}
	return nil
}

// pathProblem returns why p is invalid, or "" when it is valid.
func pathProblem(p string) string {
	switch {
	case p == "":
		return "path is empty"
	case p[0] != '/':
		return "path must start with /"
	case len(p) == 1:
		return ""
	case p[len(p)-1] == '/':
		return "path must not end with /"
	}
	// '/' and '.' are ASCII, so they never occur inside a multi-byte UTF-8
	// sequence and byte-wise splitting is safe.
	for start := 1; start <= len(p); {
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		seg := p[start:end]
		switch seg {
		case "":
			return fmt.Sprintf("empty node name at byte %d", start)
		case ".", "..":
			return fmt.Sprintf("relative segment %q at byte %d", seg, start)
		}
		for i := 0; i < len(seg); {
			r, size := utf8.DecodeRuneInString(seg[i:])
			if r == 0 {
				return fmt.Sprintf("NUL character at byte %d", start+i)
			}
			if r == utf8.RuneError && size == 1 {
				return fmt.Sprintf("invalid UTF-8 at byte %d", start+i)
			}
			if !pathRuneAllowed(r) {
				return fmt.Sprintf("invalid character %U at byte %d", r, start+i)
			}
			i += size
		}
		start = end + 1
	}
	return ""
}

// pathRuneAllowed reports whether r passes ZooKeeper's character check,
// which works on UTF-16 code units: control characters, surrogates, the
// private use area and the specials block are refused.
func pathRuneAllowed(r rune) bool {
	switch {
	case r <= 0x1f,
		r >= 0x7f && r <= 0x9f,
		r >= 0xd800 && r <= 0xf8ff,
		r >= 0xfff0: // includes everything above U+FFFF (surrogate pairs in Java)
		return false
	}
	return true
}
