// Package coord is Shepherd's bundled coordination server: Apache ZooKeeper
// 3.8's wire protocol and semantics on a single node, durable on disk.
//
// The server is split the way ZooKeeper's request processors are, with each
// piece in its own package so that "where is setData applied?" is answered by
// folder names:
//
//   - coord/proto: the jute wire format (pure functions, fuzzed).
//   - coord/tree: the data tree and its transactions (no I/O).
//   - coord/watch: who watches what (no I/O).
//   - coord/wal: the transaction log and snapshots (no tree logic).
//   - coord (this package): connections, sessions and the request pipeline
//     that ties them together.
//
// # The pipeline
//
// Connection readers decode packets and hand requests to one pipeline
// goroutine, which owns the tree, the watch registry and the session table,
// so none of them needs a lock. The pipeline prepares and applies each
// request in arrival order and collects, per batch, the transactions to log
// and the replies and watch events to send. A batch then goes to the syncer
// goroutine, which appends its transactions to the log, fsyncs once for the
// whole batch (group commit) and only then releases its replies. While the
// syncer waits on the disk, the pipeline keeps adding to the next batch,
// and hands all of it over when the syncer is free.
//
// Because every reply and notification leaves through the syncer in batch
// order, no client can observe a write before it is durable: a read that saw
// an unsynced write is answered only after that write's fsync. This is what
// lets the tree be mutated before the fsync without ever acknowledging, or
// showing, a write that a crash could lose.
//
// # Bounds
//
// Nothing a client sends or fails to read grows the server without limit:
// a request is at most MaxRequestBytes (and so fits in one log record);
// every reply and watch event is encoded when the pipeline queues it and
// counts, with the bookkeeping that holds it, against its connection's
// MaxQueuedBytes (replies) or MaxQueuedEventBytes (events) until the
// writer has put it in the socket, and a connection that would owe more
// is reset and its session's watches dropped (the session lives on); a
// connection that sends no connect request within HandshakeTimeout is
// closed. Watch events go only to watchers that
// may READ the node they are about, as in ZooKeeper since CVE-2024-23944.
//
// # Locks
//
// The pipeline's state has no lock: only the pipeline goroutine touches it.
// Other goroutines that need it (four-letter words, metrics) run a closure on
// the pipeline through Server.query. The remaining mutexes are leaves: a
// connection's send queue (conn.mu), the connection registry (Server.connsMu),
// and they are never held while taking another.
//
// The server side of coord never imports a ZooKeeper client.
package coord
