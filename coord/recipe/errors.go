package recipe

import "errors"

// Errors returned by the recipes. Errors from the ZooKeeper client
// (zk.ErrNoNode, zk.ErrNodeExists, …) are returned wrapped, so errors.Is
// works on them too.
var (
	// ErrClosed reports an operation on a Session that has been closed.
	ErrClosed = errors.New("recipe: session closed")
	// ErrBadConnectString reports a connect string that is not
	// host:port[,host:port…][/chroot].
	ErrBadConnectString = errors.New("recipe: bad connect string")
	// ErrLockLost reports that a lock (or lease) was lost while held: its
	// session was lost or closed, or its node was deleted by someone else.
	// Work done under the lock after the loss was not protected.
	ErrLockLost = errors.New("recipe: lock lost")
	// ErrNotLocked reports an unlock of a lock that is not held.
	ErrNotLocked = errors.New("recipe: not locked")
	// ErrLockUpgrade reports a write lock requested by a holder of the read
	// lock of the same RWMutex, which would wait for itself forever.
	ErrLockUpgrade = errors.New("recipe: cannot upgrade a read lock to a write lock")
)
