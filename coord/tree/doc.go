// Package tree is the data tree of shepherd's ZooKeeper-compatible
// coordination server: znodes with their stats and ACLs, sessions and their
// ephemeral nodes, and the transactions that change them. It matches Apache
// ZooKeeper 3.8 (DataTree, PrepRequestProcessor, FinalRequestProcessor) in
// what clients can observe: error codes and their precedence, stats,
// sequence numbers, ACL checks and the order of watch events.
//
// # Two phases
//
// A write goes through two steps, as in ZooKeeper:
//
//   - Prepare validates a request against the current tree (paths, ACLs,
//     versions, existence) without modifying anything, and returns a Txn:
//     everything the change needs, resolved (the sequential name, the
//     ephemeral owner, the parent's new cversion, the expanded ACL). A
//     request that fails yields an error Txn, which consumes its zxid just
//     as ZooKeeper logs an error transaction.
//   - Apply carries out a Txn. It reads nothing but the Txn and the tree, so
//     replaying logged transactions (EncodeTxn, DecodeTxn, Apply) after a
//     crash rebuilds exactly the same state. It returns the per-op results
//     and the watch events, in the order ZooKeeper fires them.
//
// The server logs each Txn and applies it before it prepares the next one;
// Prepare sees only applied state (plus, inside a multi, the ops before).
//
// Snapshots are cut the same way: Freeze copies node metadata on the
// pipeline goroutine between two transactions, Frozen.WriteTo encodes the
// copy on any goroutine, and Load reads it back.
//
// # What this package must never do
//
// It does no I/O of its own (snapshots go to the io.Writer it is given),
// no networking, no logging, starts no goroutines and reads no clock:
// times come in with each call. It is not safe for concurrent use; the
// server calls it from its single pipeline goroutine, except
// Frozen.WriteTo. It never modifies node data or ACL slices in place,
// which is what makes a Frozen safe to write while the tree moves on. It
// knows nothing of connections or watches: the session tracker decides
// which sessions live, and events go back to the caller.
//
// # Known differences from ZooKeeper
//
// Where ZooKeeper iterates a hash set (children, a closing session's
// ephemerals), the order here is our own: children come in map order,
// ephemerals are deleted in path order. OpDeleteContainer only deletes
// containers and expired TTL nodes (ZooKeeper deletes any empty node that
// is not an ephemeral), and a createTTL with non-TTL flags fails with
// ErrBadArguments where ZooKeeper's apply step would throw. TTL nodes are
// always enabled, as with zookeeper.extendedTypesEnabled=true; session ids
// must therefore keep their top byte below 0xff.
//
// Quota statistics (the zookeeper_stats nodes under /zookeeper/quota) are
// kept as ZooKeeper keeps them; see quota.go. Limits are never enforced,
// as in ZooKeeper with zookeeper.enforceQuota=false (its default), and the
// warning ZooKeeper logs when a limit is exceeded is not logged: the tree
// has no logger. ZooKeeper recomputes every stats node from its subtree
// when it loads a snapshot, which resets the drift its incremental
// updates allow (nested quota roots, stats data written by a client); we
// keep the stats as they were, so that recovery reproduces the live tree
// exactly. ApproxDataBytes counts the rewritten stats data at once, where
// ZooKeeper's counter only catches up at its next load. Stats data that
// does not parse is left alone, where ZooKeeper's request processor
// crashes, and quota root paths keep path components that are all
// whitespace, which ZooKeeper's PathTrie drops.
package tree
