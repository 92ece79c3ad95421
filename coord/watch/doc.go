// Package watch is the server-side watch registry of the coordination
// server: which session watches which znode path in which way, and which
// sessions must be told when a path changes.
//
// It holds bookkeeping only. It never talks to the network, starts no
// goroutines, knows nothing about the data tree and is not safe for
// concurrent use: the server calls it from its single request pipeline, in
// the order transactions are applied, which is what makes notification order
// match commit order.
//
// # Watch kinds
//
// A session can hold, on one path, any combination of four kinds:
//
//   - Data: one-shot, set by exists and getData (the server does not tell
//     the two apart; only the client does).
//   - Child: one-shot, set by getChildren and getChildren2.
//   - Persistent: set by addWatch(PERSISTENT); fires for every event at
//     exactly its path and stays registered.
//   - PersistentRecursive: set by addWatch(PERSISTENT_RECURSIVE); fires for
//     every event at its path and at every descendant, except
//     NodeChildrenChanged, and stays registered.
//
// # Which event fires which watch
//
// The server calls Manager.Trigger once per event that ZooKeeper's DataTree
// raises: NodeCreated at the new node and NodeChildrenChanged at its parent
// for a create; NodeDeleted at the node and NodeChildrenChanged at its
// parent for a delete; NodeDataChanged for a setData.
//
//	event at path P          fires (and removes) one-shot   fires persistent
//	NodeCreated              Data on P                      Persistent on P, PersistentRecursive on P or an ancestor
//	NodeDataChanged          Data on P                      Persistent on P, PersistentRecursive on P or an ancestor
//	NodeDeleted              Data and Child on P            Persistent on P, PersistentRecursive on P or an ancestor
//	NodeChildrenChanged      Child on P                     Persistent on P
//
// A session is told at most once per Trigger call however many of its
// watches match, as ZooKeeper suppresses the child-watch notification of a
// delete for connections its data watches already told. All one-shot
// watches that matched are consumed even then.
//
// Internally the registry keeps ZooKeeper's two tables: the data table
// (Data, Persistent, PersistentRecursive) and the child table (Child,
// Persistent). They decide what removeWatches and checkWatches see, what
// Count reports (mntr's zk_watch_count sums both tables) and what the
// four-letter words show: ZooKeeper's wchs, wchc and wchp report the data
// table only, and so do Paths, BySession and ByPath.
//
// # Differences from ZooKeeper 3.8
//
// Trigger semantics, dedupe, the tables behind the four-letter words and the
// wire values of WatcherType are those of ZooKeeper 3.8. Where 3.8's
// WatchManager has bugs that Apache fixed in 3.9.0, this package follows the
// fix, because the 3.8 behaviour silently loses events:
//
//   - Different kinds on the same path coexist (ZOOKEEPER-4466). In 3.8 an
//     exists or getData on a path carrying a persistent watch demotes the
//     persistent watch's data half to one-shot, so later data changes are
//     no longer reported.
//   - removeWatches and checkWatches with WatcherData or WatcherChildren
//     concern one-shot watches only; WatcherAny also covers persistent and
//     persistent-recursive watches (ZOOKEEPER-4471). 3.8 removes half of a
//     persistent watch and leaves a "persistent children" watch behind.
//   - checkWatches looks at the asking session's watches. 3.8 answers yes
//     when any session watches the path.
//   - A persistent-recursive watch lives in the data table only and counts
//     once (3.8 also put it in the child table, where it never fired but
//     counted twice in zk_watch_count).
//
// WatcherType values 4 and 5 (Persistent, PersistentRecursive) exist only
// since ZooKeeper 3.9; a 3.8 server answers MarshallingError for them, see
// ValidWatcherType.
//
// Paths are assumed valid (absolute, no trailing slash except the root);
// the server validates them before calling in.
package watch
