// Package recipe holds the client-side coordination recipes every
// Shepherd process uses — sessions with Curator's connection states,
// locks, semaphores, elections, queues, barriers, sequential ids, watched
// values and group membership — over github.com/go-zookeeper/zk, against either
// `shepherd coord` or an Apache ZooKeeper 3.8 ensemble. It uses nothing
// only the bundled server has.
//
// # Session
//
// Dial opens a Session from a connect string, host:port[,host:port…][/chroot].
// The Session reports Connected, Suspended (connection lost, session maybe
// alive), Reconnected and Lost (session gone: expired, or unreachable long
// enough that the server may have expired it) to listeners, retries
// operations cut off by connection loss with exponential backoff (Retry),
// applies the chroot that go-zookeeper lacks, and offers Curator's
// protected creates (CreateProtected).
//
// A Session declares a session Lost no later than the earliest moment its
// server could expire it — it measures, on its own clock, when the server
// last provably heard from it — so a partitioned lock holder learns of
// its loss before the lock can be granted to anyone else.
//
// # Locks
//
// Mutex is the herd-free exclusive lock of the ZooKeeper recipes, named as
// Apache Curator's InterProcessMutex names its nodes so that Go and Java
// processes share a lock, and understanding kazoo's node names. RWMutex is
// the shared lock (readers wait only for writers), Semaphore hands out N
// leases with Curator's InterProcessSemaphoreV2 layout, and MultiLock takes
// several locks, all or none. Every lock tells its holder when it is lost
// (Lost) and orders contenders by sequence number only.
//
// # Elections and the rest
//
// Election is a herd-free leader latch with a fencing token (the leader
// node's creation zxid) and a selector form (RunSelector); Queue is a FIFO
// over persistent-sequential nodes with exactly-once takes; Barrier and
// DoubleBarrier are the classic barriers; IDs hands out names such as
// type2-job-0000000003; Value keeps a watched copy of a node; Join and
// WatchGroup are group membership.
//
// docs/recipes.md describes each recipe's guarantees, failure behaviour
// and node layout.
//
// # Concurrency
//
// Every type is safe for concurrent use. Inside the package, Session.mu
// is never held while calling out (to go-zookeeper, to listeners, to a
// lock); a lock's mu is taken alone, or after nothing — except that a
// RWMutex's read side asks its write side for its node (read mu is not
// held then). Listeners run on one goroutine per Session, in order.
package recipe
