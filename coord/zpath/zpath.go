// Package zpath splits and joins ZooKeeper node paths: absolute,
// '/'-separated, no trailing slash, "/" the root. The data tree, the
// client recipes and ctl share it so that "the parent of /a is /" is
// decided once. It only cuts strings: validation stays with the code
// that answers a client (coord/tree and coord/recipe, as ZooKeeper's
// PathUtils), and nothing here does I/O.
package zpath

import "strings"

// Split splits a valid path other than "/" into its parent and last
// name; the parent of "/a" is "/". Both share p's memory.
func Split(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	parent, name = p[:i], p[i+1:]
	if parent == "" {
		parent = "/"
	}
	return parent, name
}

// Parent is Split's parent.
func Parent(p string) string {
	parent, _ := Split(p)
	return parent
}

// Join joins a parent path and a child name.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
