package recipe

import (
	"context"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Naming selects the names of a Mutex's contender nodes. Every Naming
// orders contenders by sequence number, so Go processes using different
// Namings on one path exclude each other; the choice matters to the
// other implementations sharing the path.
type Naming int

const (
	// CuratorNaming names nodes _c_<uuid>-lock-<seq>, as Apache Curator's
	// InterProcessMutex does, so Go and Java processes share the lock. The
	// lock directory is created as a container node, as Curator does.
	// kazoo's Lock sees these nodes when given
	// extra_lock_patterns=("-lock-",), but only on a persistent directory
	// (create it with Session.EnsurePath first): kazoo does not expect its
	// lock directory to disappear.
	CuratorNaming Naming = iota
	// KazooNaming names nodes <uuid hex>__lock__<seq>, as kazoo's Lock and
	// Election do, for paths shared with kazoo (its Election cannot be
	// told about other names). Curator cannot share such a path. The lock
	// directory is created persistent, as kazoo does: kazoo creates it once
	// and would fail if the server removed it as an empty container.
	KazooNaming
)

// Node-name parts of the two namings.
const (
	curatorLockName = "lock-"
	kazooLockName   = "__lock__"
)

// MutexOption configures a Mutex.
type MutexOption func(*mutexConfig)

type mutexConfig struct {
	naming Naming
	data   []byte
	prefix string // WithNodePrefix
}

// WithNaming sets the contender node names (default CuratorNaming).
func WithNaming(n Naming) MutexOption { return func(c *mutexConfig) { c.naming = n } }

// WithNodeData sets the data of the contender nodes, e.g. a host name,
// for operators who list who holds and who waits.
func WithNodeData(data []byte) MutexOption { return func(c *mutexConfig) { c.data = data } }

// Mutex is a distributed exclusive lock: the herd-free lock of the
// ZooKeeper recipes and Apache Curator's InterProcessMutex.
//
// Contenders queue as ephemeral sequential children of path; the one with
// the smallest sequence number holds the lock and each other watches only
// its predecessor, so a release wakes exactly one waiter. The lock is fair
// (first come, first served) and reentrant: a Mutex value is one holder,
// and Lock on a held Mutex only counts one more Unlock to come. To exclude
// goroutines of one process from each other, give each its own Mutex.
//
// A holder learns of the loss of its lock through Lost: when its session
// is lost (expired, or unreachable for so long that the server may have
// expired it — declared before the server can grant the lock to anyone
// else) or its node is deleted. It must then stop acting as the holder.
// Writes that must never come from a stale holder can be fenced with Node
// (see the example).
type Mutex struct {
	path string
	l    *lock
}

// NewMutex returns the Mutex at path, a directory created (as container
// nodes) on first use.
func NewMutex(s *Session, path string, opts ...MutexOption) *Mutex {
	var cfg mutexConfig
	for _, o := range opts {
		o(&cfg)
	}
	name := func() (string, string) {
		if cfg.naming == KazooNaming {
			marker := strings.ReplaceAll(newUUID(), "-", "") + kazooLockName
			return marker, marker
		}
		marker := protectedPrefix + newUUID() + "-"
		return marker, marker + curatorLockName
	}
	l := newLock(s, path, name, waitForPredecessor)
	l.data = cfg.data
	if cfg.naming == KazooNaming {
		l.dirFlag = zk.FlagPersistent
	}
	if cfg.prefix != "" {
		l.usePrefix(cfg.prefix)
	}
	return &Mutex{path: path, l: l}
}

// waitForPredecessor is the rule of an exclusive lock: the first holds it,
// every other waits for the one just before it.
func waitForPredecessor(_ []contender, me int) int { return me - 1 }

// Lock acquires the lock, waiting as long as ctx allows. On a Mutex
// already held it only counts one more hold. A Lock that gives up (ctx
// done) deletes its node, so it does not hold up the queue. Lock on a
// Mutex whose hold was lost returns ErrLockLost: Unlock it first.
func (m *Mutex) Lock(ctx context.Context) error { return m.l.lock(ctx) }

// TryLock acquires the lock if nobody holds or waits for it, and returns
// false at once otherwise. ctx bounds the round trips.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.l.tryLock(ctx) }

// Unlock releases one hold; the last one deletes the node, waking the
// next waiter. It returns ErrNotLocked if the Mutex is not held, and
// ErrLockLost (after cleaning up) if the hold was lost. While the session
// is suspended Unlock waits, at most until the session is lost.
func (m *Mutex) Unlock() error { return m.l.unlock() }

// Lost returns a channel closed when the current hold is lost, or already
// closed when the Mutex is not held.
func (m *Mutex) Lost() <-chan struct{} { return m.l.lost() }

// Node returns the path of the lock node while held, or "". A write
// conditioned on it — a Multi with zk.CheckVersionRequest{Path: Node(),
// Version: 0} — fails once the lock is lost, whatever the holder knows.
func (m *Mutex) Node() string { return m.l.node() }

// Path returns the lock's directory.
func (m *Mutex) Path() string { return m.path }
