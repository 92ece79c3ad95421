package tree

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// meta is a znode's persisted metadata, ZooKeeper's StatPersisted. cversion
// counts child creations only; clients see cversion*2-numChildren (see
// node.stat), which counts creations and deletions.
type meta struct {
	czxid, mzxid, pzxid int64
	ctime, mtime        int64
	owner               int64 // ephemeralOwner, with ZooKeeper's container/TTL encoding
	version, cversion   int32
	aversion            int32
}

// node is one znode. data and acl are never modified in place, only
// replaced, so a frozen snapshot can share them.
type node struct {
	meta
	data     []byte
	acl      *aclList
	children map[string]struct{} // nil while the node has none
}

// stat returns the node's Stat as ZooKeeper's DataNode.copyStat shows it.
func (n *node) stat() proto.Stat {
	nc := int32(len(n.children))
	return proto.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       n.cversion*2 - nc,
		Aversion:       n.aversion,
		EphemeralOwner: clientOwner(n.owner),
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
	}
}

func (n *node) addChild(name string) {
	if n.children == nil {
		n.children = make(map[string]struct{}, 1)
	}
	n.children[name] = struct{}{}
}

func (n *node) removeChild(name string) {
	delete(n.children, name)
	if len(n.children) == 0 {
		n.children = nil // let a drained queue give its map back
	}
}

// Tree is the data tree of a ZooKeeper-compatible server: znodes, sessions
// and their ephemerals. It is not safe for concurrent use; see the package
// documentation.
type Tree struct {
	nodes      map[string]*node
	acls       *aclCache
	sessions   map[int64]int32 // live session -> timeout ms
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	lastZxid   int64
	dataBytes  int64 // sum of path length (UTF-16 units) and data length, as ZooKeeper's approximateDataSize
	ephCount   int
	quotas     *quotaTrie // the quota roots (see quota.go); nil while there are none
}

// Paths of the nodes every ZooKeeper tree starts with.
const (
	zookeeperPath = "/zookeeper"
	quotaPath     = "/zookeeper/quota"
	configPath    = "/zookeeper/config"
)

func newEmpty() *Tree {
	return &Tree{
		nodes:      make(map[string]*node),
		acls:       newACLCache(),
		sessions:   make(map[int64]int32),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}
}

// New returns a tree holding what a fresh ZooKeeper 3.8 server holds: "/",
// "/zookeeper", "/zookeeper/quota" and "/zookeeper/config", with zero
// zxids and times, empty (not null) data, world:anyone ALL, except
// /zookeeper/config which is world:anyone READ with aversion -1 (ZooKeeper
// sets its ACL with version -1 at startup).
func New() *Tree {
	t := newEmpty()
	open := t.acls.acquire(proto.ACLOpenUnsafe)
	for _, p := range []string{"/", zookeeperPath, quotaPath} {
		t.insert(p, &node{data: []byte{}, acl: open})
		if p != "/" {
			open.refs++
		}
	}
	cfg := &node{data: []byte{}, acl: t.acls.acquire(proto.ACLReadUnsafe)}
	cfg.aversion = -1
	t.insert(configPath, cfg)
	return t
}

// insert adds n at path and links it to its parent, which must exist
// (except for the root). It maintains every index but not the parent's
// stat.
func (t *Tree) insert(path string, n *node) {
	t.nodes[path] = n
	if path != "/" {
		parent, name := zpath.Split(path)
		t.nodes[parent].addChild(name)
	}
	t.dataBytes += nodeSize(path, n.data)
	t.addQuotaRoot(path)
	switch kindOf(n.owner) {
	case kindSession:
		set := t.ephemerals[n.owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[n.owner] = set
		}
		set[path] = struct{}{}
		t.ephCount++
	case kindContainer:
		t.containers[path] = struct{}{}
	case kindTTL:
		t.ttls[path] = struct{}{}
	}
}

// remove unlinks the node at path from every index and from its parent.
func (t *Tree) remove(path string, n *node, parent *node) {
	_, name := zpath.Split(path)
	parent.removeChild(name)
	delete(t.nodes, path)
	t.acls.release(n.acl)
	t.dataBytes -= nodeSize(path, n.data)
	t.removeQuotaRoot(path)
	switch kindOf(n.owner) {
	case kindSession:
		if set := t.ephemerals[n.owner]; set != nil {
			if _, ok := set[path]; ok {
				delete(set, path)
				t.ephCount--
			}
			if len(set) == 0 {
				delete(t.ephemerals, n.owner)
			}
		}
	case kindContainer:
		delete(t.containers, path)
	case kindTTL:
		delete(t.ttls, path)
	}
}

// nodeSize is a node's share of ApproxDataBytes: ZooKeeper adds the path's
// length in UTF-16 code units and the data's length in bytes.
func nodeSize(path string, data []byte) int64 {
	return int64(utf16Len(path) + len(data))
}

func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xffff {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// LastZxid returns the highest zxid applied so far.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// Get returns a node's data and stat, after checking READ permission. The
// data is shared with the tree and must not be modified. Errors are
// proto.ErrNoNode and proto.ErrNoAuth.
func (t *Tree) Get(c Caller, path string) ([]byte, proto.Stat, error) {
	n := t.nodes[path]
	if n == nil {
		return nil, proto.Stat{}, proto.ErrNoNode
	}
	if !c.allowed(n.acl.acls, proto.PermRead) {
		return nil, proto.Stat{}, proto.ErrNoAuth
	}
	return n.data, n.stat(), nil
}

// Stat returns a node's stat, or false if it does not exist. Like
// ZooKeeper's exists, it checks no ACL.
func (t *Tree) Stat(path string) (proto.Stat, bool) {
	n := t.nodes[path]
	if n == nil {
		return proto.Stat{}, false
	}
	return n.stat(), true
}

// Children returns the names of a node's children, in no particular order
// (ZooKeeper's is a hash order too), and its stat, after checking READ
// permission.
func (t *Tree) Children(c Caller, path string) ([]string, proto.Stat, error) {
	n := t.nodes[path]
	if n == nil {
		return nil, proto.Stat{}, proto.ErrNoNode
	}
	if !c.allowed(n.acl.acls, proto.PermRead) {
		return nil, proto.Stat{}, proto.ErrNoAuth
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	return names, n.stat(), nil
}

// GetACL returns a node's ACL and stat as ZooKeeper 3.8 does: the caller
// needs READ or ADMIN; without ADMIN the hashes of digest entries are
// replaced by "x". The returned slice must not be modified.
func (t *Tree) GetACL(c Caller, path string) ([]proto.ACL, proto.Stat, error) {
	n := t.nodes[path]
	if n == nil {
		return nil, proto.Stat{}, proto.ErrNoNode
	}
	acls := n.acl.acls
	if !c.allowed(acls, proto.PermRead|proto.PermAdmin) {
		return nil, proto.Stat{}, proto.ErrNoAuth
	}
	if !c.allowed(acls, proto.PermAdmin) {
		acls = redactDigests(acls)
	}
	return acls, n.stat(), nil
}

// AllChildrenNumber returns the number of descendants of a node (not
// counting the node), after checking READ permission.
func (t *Tree) AllChildrenNumber(c Caller, path string) (int32, error) {
	n := t.nodes[path]
	if n == nil {
		return 0, proto.ErrNoNode
	}
	if !c.allowed(n.acl.acls, proto.PermRead) {
		return 0, proto.ErrNoAuth
	}
	if path == "/" {
		return int32(len(t.nodes) - 1), nil
	}
	count := 0
	stack := []string{path}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for name := range t.nodes[p].children {
			count++
			stack = append(stack, zpath.Join(p, name))
		}
	}
	return int32(count), nil
}

// Ephemerals returns the sorted paths of a session's ephemeral nodes that
// start with prefix (a plain string prefix, as ZooKeeper's getEphemerals);
// an empty or blank prefix, or "/", selects them all.
func (t *Tree) Ephemerals(session int64, prefix string) []string {
	set := t.ephemerals[session]
	if trimmed := strings.TrimFunc(prefix, func(r rune) bool { return r <= ' ' }); trimmed == "" || trimmed == "/" {
		prefix = ""
	}
	out := make([]string, 0, len(set))
	for p := range set {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Sessions returns the live sessions and their timeouts in milliseconds:
// those created and not yet closed, including across Freeze and Load.
func (t *Tree) Sessions() map[int64]int32 {
	out := make(map[int64]int32, len(t.sessions))
	for id, to := range t.sessions {
		out[id] = to
	}
	return out
}

// Reapable returns, sorted, the nodes ZooKeeper's ContainerManager would
// delete at nowMs: containers that have had a child (cversion > 0) and
// have none now, and childless TTL nodes not modified for longer than
// their TTL. The server deletes each with an OpDeleteContainer.
func (t *Tree) Reapable(nowMs int64) []string {
	var out []string
	for p := range t.containers {
		if n := t.nodes[p]; len(n.children) == 0 && n.cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		if n := t.nodes[p]; len(n.children) == 0 && ttlExpired(n, nowMs) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func ttlExpired(n *node, nowMs int64) bool {
	ttl := ttlOf(n.owner)
	return ttl != 0 && nowMs-n.mtime > ttl
}

// NodeCount returns the number of znodes, the root included. (ZooKeeper's
// zk_znode_count is one more: its node map holds the root twice.)
func (t *Tree) NodeCount() int { return len(t.nodes) }

// ApproxDataBytes returns the sum over all znodes of the path length and
// the data length, as ZooKeeper's zk_approximate_data_size.
func (t *Tree) ApproxDataBytes() int64 { return t.dataBytes }

// EphemeralCount returns the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int { return t.ephCount }

// Walk calls fn for every node, parents before children and siblings in
// name order, until fn returns false. fn must not modify the tree.
func (t *Tree) Walk(fn func(path string, st proto.Stat) bool) {
	t.walk("/", fn)
}

func (t *Tree) walk(path string, fn func(string, proto.Stat) bool) bool {
	n := t.nodes[path]
	if !fn(path, n.stat()) {
		return false
	}
	if len(n.children) == 0 {
		return true
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !t.walk(zpath.Join(path, name), fn) {
			return false
		}
	}
	return true
}
