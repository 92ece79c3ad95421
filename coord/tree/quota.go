package tree

import (
	"strings"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// Quotas, as ZooKeeper 3.8 keeps them. A client (zkCli's setquota) marks
// the subtree at P by creating /zookeeper/quota<P>/zookeeper_limits and
// /zookeeper/quota<P>/zookeeper_stats. From then on the server keeps the
// stats node's data at "count=N,bytes=M": the number of znodes in the
// subtree (P included) and the sum of their data lengths. The stats node
// changes without a new version, mzxid or mtime and fires no watch, as in
// ZooKeeper; only its data (and so its dataLength) moves.
//
// The rules follow ZooKeeper's DataTree, including its quirks, because they
// decide what clients read:
//   - P is a quota root while its zookeeper_limits node exists.
//   - Creating a zookeeper_stats node overwrites its data with the counts
//     of P's subtree at that moment (the whole tree for the stats node
//     directly under /zookeeper/quota, though no limits node can make the
//     root a quota root).
//   - A create, delete or setData below a quota root adds its difference
//     to the stats of the deepest quota root above it, and only that one;
//     the rewrite of a stats node is not itself counted anywhere.
//   - The update parses the stats data as ZooKeeper's StatsTrack does and
//     keeps keys it does not know. A missing stats node, or stats data that
//     does not parse, leaves the stats alone (ZooKeeper logs the first and
//     crashes its request processor on the second).
//
// Everything is derived in Apply from the transaction and the tree, and
// the quota roots from the limits nodes, so replaying a log and loading a
// snapshot reproduce the stats exactly.

// The names of the quota nodes, and the keys of the stats the server keeps.
const (
	limitsSuffix = "/zookeeper_limits"
	statsSuffix  = "/zookeeper_stats"
	quotaCount   = "count"
	quotaBytes   = "bytes"
)

// quotaRootOf returns the quota root P of a node at /zookeeper/quota<P>/<leaf>,
// where suffix is "/"+leaf. P is "" for a leaf directly under
// /zookeeper/quota.
func quotaRootOf(path, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, quotaPath)
	if !ok {
		return "", false
	}
	root, ok := strings.CutSuffix(rest, suffix)
	if !ok || (root != "" && root[0] != '/') {
		return "", false // not below /zookeeper/quota, or not named leaf
	}
	return root, true
}

// quotaLimitsRoot returns the quota root whose limits node is at path. A
// limits node directly under /zookeeper/quota makes no quota root: the
// tree's root cannot have a quota (ZooKeeper throws on it).
func quotaLimitsRoot(path string) (string, bool) {
	if !strings.HasSuffix(path, limitsSuffix) {
		return "", false // the common case, decided by one comparison
	}
	root, ok := quotaRootOf(path, limitsSuffix)
	return root, ok && root != ""
}

// statsPath returns the path of the stats node of quota root P.
func statsPath(root string) string {
	return quotaPath + root + statsSuffix
}

// quotaCreated updates the quota stats for node n just inserted at path.
// It runs after the node is in the tree, so a new stats node counts itself
// when its subtree contains it, and it charges the data the node was
// created with, not the stats it was rewritten to, as ZooKeeper does.
func (t *Tree) quotaCreated(path string, n *node) {
	size := int64(len(n.data))
	if strings.HasSuffix(path, statsSuffix) {
		if root, ok := quotaRootOf(path, statsSuffix); ok {
			count, bytes := t.subtreeUsage(root)
			t.setQuotaData(n, formatStats(map[string]int64{quotaCount: count, quotaBytes: bytes}))
		}
	}
	t.chargeQuota(path, size, 1)
}

// subtreeUsage counts the nodes of the subtree at path ("" being the
// root) and the bytes of their data; a missing node counts nothing.
func (t *Tree) subtreeUsage(path string) (count, bytes int64) {
	if path == "" {
		path = "/"
	}
	if t.nodes[path] == nil {
		return 0, 0
	}
	stack := []string{path}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := t.nodes[p]
		count++
		bytes += int64(len(n.data))
		for name := range n.children {
			stack = append(stack, zpath.Join(p, name))
		}
	}
	return count, bytes
}

// chargeQuota adds a change of count nodes and bytes data bytes at path to
// the stats of the deepest quota root above it, if any. With no quota
// root in the tree it costs one nil check.
func (t *Tree) chargeQuota(path string, bytes int64, count int64) {
	if t.quotas == nil {
		return
	}
	root, ok := t.quotas.deepest(path)
	if !ok {
		return
	}
	sn := t.nodes[statsPath(root)]
	if sn == nil {
		return
	}
	stats, ok := parseStats(sn.data)
	if !ok {
		return
	}
	stats[quotaCount] = statValue(stats, quotaCount) + count
	stats[quotaBytes] = statValue(stats, quotaBytes) + bytes
	t.setQuotaData(sn, formatStats(stats))
}

// setQuotaData replaces a stats node's data, keeping ApproxDataBytes exact
// (ZooKeeper's own counter misses these rewrites until it reloads).
// Replacing, never modifying, keeps frozen snapshots safe.
func (t *Tree) setQuotaData(n *node, data []byte) {
	t.dataBytes += int64(len(data) - len(n.data))
	n.data = data
}

// resetQuotaStats recomputes the stats of every quota root from its
// subtree, in path order, as ZooKeeper does when it loads a snapshot. Load
// needs it only for snapshots written before stats were maintained.
func (t *Tree) resetQuotaStats() {
	if t.quotas == nil {
		return
	}
	for _, root := range t.quotas.roots() {
		if sn := t.nodes[statsPath(root)]; sn != nil {
			count, bytes := t.subtreeUsage(root)
			t.setQuotaData(sn, formatStats(map[string]int64{quotaCount: count, quotaBytes: bytes}))
		}
	}
}

// addQuotaRoot and removeQuotaRoot keep the trie of quota roots in step
// with the limits nodes; insert and remove call them for every node.
func (t *Tree) addQuotaRoot(path string) {
	root, ok := quotaLimitsRoot(path)
	if !ok {
		return
	}
	if t.quotas == nil {
		t.quotas = &quotaTrie{}
	}
	t.quotas.add(root)
}

func (t *Tree) removeQuotaRoot(path string) {
	root, ok := quotaLimitsRoot(path)
	if !ok || t.quotas == nil {
		return
	}
	if t.quotas.remove(root) {
		t.quotas = nil // back to the free path once the last quota goes
	}
}
