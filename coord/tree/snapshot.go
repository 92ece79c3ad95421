package tree

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// ErrCorruptSnapshot reports a snapshot that Load cannot read back.
var ErrCorruptSnapshot = errors.New("tree: corrupt snapshot")

// Snapshot layout (all integers big-endian, strings and buffers as jute
// writes them):
//
//	magic "SHTR", format uint32
//	zxid int64
//	sessions int32, then per session: id int64, timeout int32
//	acls int32, then per ACL list: a jute vector<ACL>
//	nodes int64, then per node, parents first (this version writes them
//	depth first from the root, siblings in name order; earlier versions
//	wrote them in path order, which loads the same):
//	    path string, data buffer (-1 for null), acl index int32,
//	    czxid mzxid pzxid ctime mtime ephemeralOwner int64,
//	    version cversion aversion int32
//	crc32c uint32 of everything above
//
// Format 2 has format 1's layout; it says that zookeeper_stats data is
// maintained (see quota.go). Load recomputes the stats of a format 1
// snapshot, written before they were, as ZooKeeper recomputes them on
// every load; a format 2 snapshot keeps them as written, so that a loaded
// tree is exactly the one that was frozen.
const (
	snapMagic    = "SHTR"
	snapFormat   = 2
	snapFormatV1 = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Frozen is a consistent copy of a tree's state at one zxid, made cheaply
// on the tree's goroutine and written out elsewhere. It shares node data
// and ACLs with the tree, which never modifies them in place.
type Frozen struct {
	zxid     int64
	sessions []frozenSession
	nodes    []frozenNode
	// order lists nodes' indexes in the order WriteTo writes them; nil
	// until the first WriteTo works it out.
	order []int32
}

type frozenSession struct {
	id      int64
	timeout int32
}

type frozenNode struct {
	path string
	data []byte
	acl  *aclList
	meta meta
}

// Freeze captures the tree for a snapshot. It copies each node's metadata
// and references its data (O(nodes), no encoding), so it can run on the
// pipeline goroutine between two transactions; WriteTo can then run on any
// goroutine while the tree moves on.
func (t *Tree) Freeze() *Frozen {
	f := &Frozen{
		zxid:     t.lastZxid,
		sessions: make([]frozenSession, 0, len(t.sessions)),
		nodes:    make([]frozenNode, 0, len(t.nodes)),
	}
	for id, to := range t.sessions {
		f.sessions = append(f.sessions, frozenSession{id, to})
	}
	for p, n := range t.nodes {
		f.nodes = append(f.nodes, frozenNode{path: p, data: n.data, acl: n.acl, meta: n.meta})
	}
	return f
}

// Zxid returns the zxid of the last transaction the snapshot includes.
func (f *Frozen) Zxid() int64 { return f.zxid }

// WriteTo writes the snapshot to w and returns the bytes written. The
// output depends only on the tree's state, so equal trees give equal bytes.
// It must not run concurrently with another WriteTo of the same Frozen.
func (f *Frozen) WriteTo(w io.Writer) (int64, error) {
	if f.order == nil {
		order, err := parentsFirst(f.nodes)
		if err != nil {
			return 0, fmt.Errorf("tree: write snapshot at zxid %#x: %w", f.zxid, err)
		}
		f.order = order
		slices.SortFunc(f.sessions, func(a, b frozenSession) int { return cmpInt64(a.id, b.id) })
	}
	cw := &countingWriter{w: w}
	sw := &snapWriter{w: bufio.NewWriterSize(cw, 256<<10)}
	e := proto.NewEncoder(make([]byte, 0, 4096))

	sw.write([]byte(snapMagic))
	e.Int(snapFormat)
	e.Long(f.zxid)
	e.Int(int32(len(f.sessions)))
	for _, s := range f.sessions {
		e.Long(s.id)
		e.Int(s.timeout)
	}
	sw.write(e.Bytes())

	// Number the ACL lists in order of first use.
	index := make(map[*aclList]int32)
	var lists []*aclList
	for _, i := range f.order {
		if _, ok := index[f.nodes[i].acl]; !ok {
			index[f.nodes[i].acl] = int32(len(lists))
			lists = append(lists, f.nodes[i].acl)
		}
	}
	e.Reset()
	e.Int(int32(len(lists)))
	for _, l := range lists {
		proto.EncodeACLs(e, l.acls)
	}
	e.Long(int64(len(f.nodes)))
	sw.write(e.Bytes())

	for _, i := range f.order {
		n := &f.nodes[i]
		e.Reset()
		e.String(n.path)
		e.Buffer(n.data)
		e.Int(index[n.acl])
		e.Long(n.meta.czxid)
		e.Long(n.meta.mzxid)
		e.Long(n.meta.pzxid)
		e.Long(n.meta.ctime)
		e.Long(n.meta.mtime)
		e.Long(n.meta.owner)
		e.Int(n.meta.version)
		e.Int(n.meta.cversion)
		e.Int(n.meta.aversion)
		sw.write(e.Bytes())
		if sw.err != nil {
			break
		}
	}
	var trailer [4]byte
	binary.BigEndian.PutUint32(trailer[:], sw.crc)
	sw.write(trailer[:])
	if sw.err == nil {
		sw.err = sw.w.Flush()
	}
	if sw.err != nil {
		return cw.n, fmt.Errorf("tree: write snapshot at zxid %#x: %w", f.zxid, sw.err)
	}
	return cw.n, nil
}

// parentsFirst returns the order in which a snapshot lists nodes: depth
// first from the root, siblings in name order. Every parent comes before
// its children, which is what Load needs, and equal trees get the same
// order, so that they give equal bytes. Sorting each sibling list by name
// costs a fraction of sorting every path, whose comparisons walk the long
// prefixes siblings share: at 500k znodes that sort took a quarter of a
// create-heavy server's CPU.
func parentsFirst(nodes []frozenNode) ([]int32, error) {
	type child struct {
		name string
		i    int32
	}
	children := make(map[string][]child)
	root := int32(-1)
	for i := range nodes {
		if nodes[i].path == "/" {
			root = int32(i)
			continue
		}
		parent, name := zpath.Split(nodes[i].path)
		children[parent] = append(children[parent], child{name, int32(i)})
	}
	if root < 0 {
		return nil, errors.New("no root znode")
	}
	order := make([]int32, 0, len(nodes))
	stack := []int32{root}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, i)
		kids := children[nodes[i].path]
		// Pushed in reverse name order, they are popped in name order.
		slices.SortFunc(kids, func(a, b child) int { return strings.Compare(b.name, a.name) })
		for _, k := range kids {
			stack = append(stack, k.i)
		}
	}
	if len(order) != len(nodes) {
		return nil, fmt.Errorf("%d of %d znodes are not under the root", len(nodes)-len(order), len(nodes))
	}
	return order, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// snapWriter checksums what it writes, remembering the first error.
type snapWriter struct {
	w   *bufio.Writer
	crc uint32
	err error
}

func (s *snapWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	s.crc = crc32.Update(s.crc, crcTable, b)
	_, s.err = s.w.Write(b)
}

// countingWriter counts the bytes that reach the destination.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Limits on what a snapshot record may claim, so a damaged length cannot
// make Load allocate without bound.
const (
	maxSnapPath = 16 << 20
	maxSnapData = 1 << 30
)

// Load reads a snapshot written by Frozen.WriteTo and returns the tree it
// describes. Everything is checked: the checksum, the structure (the root
// first, every parent before its children, no duplicates) and the ACL
// references; errors wrap ErrCorruptSnapshot.
func Load(r io.Reader) (*Tree, error) {
	sr := &snapReader{r: bufio.NewReaderSize(r, 32<<10)}
	t, err := sr.load()
	if err != nil {
		return nil, err
	}
	return t, nil
}

type snapReader struct {
	r       *bufio.Reader
	crc     uint32
	scratch [8]byte
	err     error
}

func (s *snapReader) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
	}
}

func (s *snapReader) full(b []byte) bool {
	if s.err != nil {
		return false
	}
	if _, err := io.ReadFull(s.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
		return false
	}
	s.crc = crc32.Update(s.crc, crcTable, b)
	return true
}

func (s *snapReader) i32() int32 {
	if !s.full(s.scratch[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s.scratch[:4]))
}

func (s *snapReader) i64() int64 {
	if !s.full(s.scratch[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s.scratch[:8]))
}

// bytes reads n bytes. Large reads grow their buffer as the data arrives,
// so a bogus length fails at the end of the input, not in the allocator.
func (s *snapReader) bytes(n int) []byte {
	if s.err != nil {
		return nil
	}
	if n <= 64<<10 {
		b := make([]byte, n)
		s.full(b)
		return b
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, s.r, int64(n)); err != nil {
		s.fail("%d-byte field cut short: %v", n, err)
		return nil
	}
	s.crc = crc32.Update(s.crc, crcTable, buf.Bytes())
	return buf.Bytes()
}

func (s *snapReader) str(limit int) string {
	n := s.i32()
	if n < 0 || int(n) > limit {
		s.fail("string length %d", n)
		return ""
	}
	return string(s.bytes(int(n)))
}

func (s *snapReader) buffer() []byte {
	n := s.i32()
	switch {
	case n == -1:
		return nil
	case n < 0 || n > maxSnapData:
		s.fail("buffer length %d", n)
		return nil
	}
	return s.bytes(int(n))
}

// count reads a non-negative element count.
func (s *snapReader) count(what string) int {
	n := s.i32()
	if n < 0 {
		s.fail("%s count %d", what, n)
		return 0
	}
	return int(n)
}

func (s *snapReader) load() (*Tree, error) {
	var head [8]byte
	if !s.full(head[:]) {
		return nil, s.err
	}
	if string(head[:4]) != snapMagic {
		return nil, fmt.Errorf("%w: not a tree snapshot (magic %q)", ErrCorruptSnapshot, head[:4])
	}
	format := binary.BigEndian.Uint32(head[4:])
	if format != snapFormat && format != snapFormatV1 {
		return nil, fmt.Errorf("%w: unknown format %d", ErrCorruptSnapshot, format)
	}
	t := newEmpty()
	zxid := s.i64()
	nsess := s.count("session")
	for i := 0; i < nsess && s.err == nil; i++ {
		id := s.i64()
		t.sessions[id] = s.i32()
	}

	nacl := s.count("ACL list")
	var lists [][]proto.ACL
	for i := 0; i < nacl && s.err == nil; i++ {
		lists = append(lists, s.acls())
	}
	interned := make([]*aclList, len(lists))

	nnodes := s.i64()
	if nnodes < 1 && s.err == nil {
		s.fail("node count %d", nnodes)
	}
	if s.err == nil {
		// The count is not checksummed yet: trust it for sizing only up
		// to a bound, so a damaged one cannot reserve gigabytes.
		hint := int(min(nnodes, 1<<16))
		t.nodes = make(map[string]*node, hint)
	}
	for i := int64(0); i < nnodes && s.err == nil; i++ {
		path := s.str(maxSnapPath)
		n := &node{data: s.buffer()}
		idx := s.i32()
		n.czxid, n.mzxid, n.pzxid = s.i64(), s.i64(), s.i64()
		n.ctime, n.mtime, n.owner = s.i64(), s.i64(), s.i64()
		n.version, n.cversion, n.aversion = s.i32(), s.i32(), s.i32()
		if s.err != nil {
			break
		}
		if idx < 0 || int(idx) >= len(lists) {
			s.fail("node %q names ACL list %d of %d", path, idx, len(lists))
			break
		}
		if err := t.checkPlace(path, i == 0); err != "" {
			s.fail("node %q: %s", path, err)
			break
		}
		if interned[idx] == nil {
			interned[idx] = t.acls.acquire(lists[idx])
		} else {
			interned[idx].refs++
		}
		n.acl = interned[idx]
		t.insert(path, n)
	}
	var trailer [4]byte
	want := s.crc
	if s.full(trailer[:]) && binary.BigEndian.Uint32(trailer[:]) != want {
		s.fail("checksum mismatch")
	}
	if s.err == nil {
		if _, err := s.r.ReadByte(); err != io.EOF {
			s.fail("data after the checksum")
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	t.lastZxid = zxid
	if format == snapFormatV1 {
		t.resetQuotaStats()
	}
	return t, nil
}

func (s *snapReader) acls() []proto.ACL {
	n := s.i32()
	if n == -1 {
		return nil
	}
	if n < 0 {
		s.fail("ACL length %d", n)
		return nil
	}
	var out []proto.ACL
	for i := int32(0); i < n && s.err == nil; i++ {
		perms := s.i32()
		scheme := s.str(maxSnapPath)
		id := s.str(maxSnapPath)
		out = append(out, proto.ACL{Perms: perms, Id: proto.Id{Scheme: scheme, ID: id}})
	}
	return out
}

// checkPlace reports why path cannot be the next node of a snapshot, or "".
func (t *Tree) checkPlace(path string, first bool) string {
	if first {
		if path != "/" {
			return "the first node must be the root"
		}
		return ""
	}
	if path == "" || path[0] != '/' || path == "/" || strings.HasSuffix(path, "/") {
		return "not an absolute node path"
	}
	if t.nodes[path] != nil {
		return "duplicate"
	}
	parent, _ := zpath.Split(path)
	if t.nodes[parent] == nil {
		return "parent missing (or after the node)"
	}
	return ""
}
