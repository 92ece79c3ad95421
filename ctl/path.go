package ctl

import (
	"errors"
	"fmt"
	"strings"
)

// errInvalidPath reports a path ZooKeeper would refuse. Its messages are
// zkCli.sh's, which checks paths before sending them too.
var errInvalidPath = errors.New("ctl: invalid path")

// pathError is an invalid path, worded as zkCli.sh words it.
type pathError struct{ msg string }

func (e *pathError) Error() string        { return e.msg }
func (e *pathError) Is(target error) bool { return target == errInvalidPath }

// checkPath validates a znode path as ZooKeeper's client does. A
// sequential node's path may end with "/": the server appends the number.
func checkPath(p string, sequential bool) error {
	if sequential {
		p += "1"
	}
	bad := func(format string, args ...any) error { return &pathError{fmt.Sprintf(format, args...)} }
	switch {
	case p == "":
		return bad("Path length must be > 0")
	case p[0] != '/':
		return bad("Path must start with / character")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return bad("Path must not end with / character")
	}
	// Offsets are in characters, as the Java client counts them.
	runes := []rune(p)
	for i := 1; i < len(runes); i++ {
		c := runes[i]
		prev := runes[i-1]
		switch {
		case c == 0:
			return bad("null character not allowed @%d", i)
		case c == '/' && prev == '/':
			return bad("empty node name specified @%d", i)
		case c == '.' && prev == '.' && runes[i-2] == '/' && (i+1 == len(runes) || runes[i+1] == '/'):
			return bad("relative paths not allowed @%d", i)
		case c == '.' && prev == '/' && (i+1 == len(runes) || runes[i+1] == '/'):
			return bad("relative paths not allowed @%d", i)
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f,
			c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0 && c <= 0xffff:
			return bad("invalid character @%d", i)
		}
	}
	return nil
}

// within reports whether p is root or below it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
