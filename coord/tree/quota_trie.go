package tree

import (
	"slices"
	"strings"
)

// quotaTrie holds the quota roots by path component, so that the deepest
// quota root above a path is found in one walk down the path (ZooKeeper's
// PathTrie). Unlike PathTrie it keeps components exactly: ZooKeeper drops
// components that are all whitespace, so that its quota on "/a/ " acts as
// one on "/a".
type quotaTrie struct {
	children map[string]*quotaTrie
	root     bool // the path to this trie node is a quota root
}

// add marks path (absolute, not "/") as a quota root.
func (q *quotaTrie) add(path string) {
	n := q
	for name := range strings.SplitSeq(path[1:], "/") {
		c := n.children[name]
		if c == nil {
			if n.children == nil {
				n.children = make(map[string]*quotaTrie, 1)
			}
			c = &quotaTrie{}
			n.children[name] = c
		}
		n = c
	}
	n.root = true
}

// remove unmarks path and prunes the trie nodes left without a purpose. It
// reports whether the trie is now empty.
func (q *quotaTrie) remove(path string) (empty bool) {
	q.unmark(path[1:])
	return !q.root && len(q.children) == 0
}

// unmark unmarks rest (a path without its leading "/") below q, pruning
// on the way back up, and reports whether it removed q's child for the
// first component of rest.
func (q *quotaTrie) unmark(rest string) bool {
	name, after, more := strings.Cut(rest, "/")
	c := q.children[name]
	if c == nil {
		return false
	}
	if more {
		if !c.unmark(after) {
			return false
		}
	} else {
		c.root = false
	}
	if c.root || len(c.children) > 0 {
		return false
	}
	delete(q.children, name)
	return true
}

// deepest returns the longest quota root that is path or one of its
// ancestors. The result shares path's memory.
func (q *quotaTrie) deepest(path string) (string, bool) {
	n, end := q, -1
	pos := 0 // the end of the components walked so far
	for name := range strings.SplitSeq(path[1:], "/") {
		if n = n.children[name]; n == nil {
			break
		}
		pos += 1 + len(name)
		if n.root {
			end = pos
		}
	}
	if end < 0 {
		return "", false
	}
	return path[:end], true
}

// roots returns every quota root, sorted.
func (q *quotaTrie) roots() []string {
	var out []string
	var walk func(n *quotaTrie, prefix string)
	walk = func(n *quotaTrie, prefix string) {
		if n.root {
			out = append(out, prefix)
		}
		for name, c := range n.children {
			walk(c, prefix+"/"+name)
		}
	}
	walk(q, "")
	slices.Sort(out)
	return out
}
