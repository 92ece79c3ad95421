package recipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// The znode operations below are go-zookeeper's, with three differences:
// paths are relative to the Session's chroot (created paths, children and
// watch event paths come back relative to it too); they run on whatever
// connection the Session currently has; and they honour ctx. Each makes
// one attempt — wrap them in Retry to ride out connection loss. Errors
// wrap go-zookeeper's (zk.ErrNoNode, …): test them with errors.Is.
//
// go-zookeeper cannot cancel a request it has sent: when ctx ends first
// the call returns ctx.Err() while the request completes or fails on its
// own in the background. Like a connection loss, that leaves a write's
// outcome unknown.

// do runs op on the current connection, waiting for the connection to be
// usable, and returns early when ctx ends.
func do[T any](ctx context.Context, s *Session, what, path string, op func(c *zk.Conn) (T, error)) (T, error) {
	var zero T
	c, err := s.conn(ctx)
	if err != nil {
		return zero, fmt.Errorf("recipe: %s %s: %w", what, path, err)
	}
	if ctx.Done() == nil {
		v, err := op(c)
		if err != nil {
			return v, fmt.Errorf("recipe: %s %s: %w", what, path, err)
		}
		return v, nil
	}
	type result struct {
		v   T
		err error
	}
	// The goroutine ends when go-zookeeper answers, which it always does:
	// with the reply, or with an error when the connection drops or closes.
	ch := make(chan result, 1)
	go func() {
		v, err := op(c)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.v, fmt.Errorf("recipe: %s %s: %w", what, path, r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("recipe: %s %s: %w", what, path, ctx.Err())
	}
}

// conn returns the current connection once it is usable.
func (s *Session) conn(ctx context.Context) (*zk.Conn, error) {
	s.mu.Lock()
	h, st := s.cur, s.state
	s.mu.Unlock()
	if st == StateClosed {
		return nil, ErrClosed
	}
	select {
	case <-h.ready:
		if h.err != nil {
			return nil, h.err
		}
		return h.conn, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

func (s *Session) acl(acl []zk.ACL) []zk.ACL {
	if acl == nil {
		return s.opts.ACL
	}
	return acl
}

// checkPath validates a caller's path and maps it to the server.
func (s *Session) checkPath(what, p string) (string, error) {
	if err := validatePath(p); err != nil {
		return "", fmt.Errorf("recipe: %s: %w: %v", what, zk.ErrInvalidPath, err)
	}
	return s.root.toServer(p), nil
}

// watch maps a watch channel's event path back into the chroot.
func (s *Session) watch(ch <-chan zk.Event) <-chan zk.Event {
	if ch == nil {
		return ch
	}
	out := make(chan zk.Event, 1)
	// Lives as long as the watch: it ends when the server fires it or the
	// connection invalidates it, as go-zookeeper's own channel does.
	go func() {
		defer close(out)
		ev, ok := <-ch
		if ok {
			ev.Path = s.root.fromServer(ev.Path)
			out <- ev
		}
	}()
	return out
}

// Create creates a node with flags zk.FlagPersistent, zk.FlagEphemeral,
// zk.FlagSequence or zk.FlagEphemeralSequential, and returns its path
// (with the sequence number, for sequential nodes). A nil acl means the
// Session's Options.ACL.
func (s *Session) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	sp, err := s.checkPath("create", path)
	if err != nil {
		return "", err
	}
	p, err := do(ctx, s, "create", path, func(c *zk.Conn) (string, error) {
		return c.Create(sp, data, flags, s.acl(acl))
	})
	if err != nil {
		return "", err
	}
	return s.root.fromServer(p), nil
}

// CreateContainer creates a container node: the server deletes it some
// time after its last child is deleted.
func (s *Session) CreateContainer(ctx context.Context, path string, data []byte, acl []zk.ACL) (string, error) {
	sp, err := s.checkPath("create container", path)
	if err != nil {
		return "", err
	}
	p, err := do(ctx, s, "create container", path, func(c *zk.Conn) (string, error) {
		return c.CreateContainer(sp, data, zk.FlagContainer, s.acl(acl))
	})
	if err != nil {
		return "", err
	}
	return s.root.fromServer(p), nil
}

// CreateTTL creates a persistent node (flags zk.FlagTTL, or
// zk.FlagPersistentSequentialWithTTL) that the server deletes when it has
// had no child and no change for ttl. ZooKeeper needs extended types
// enabled for TTL nodes.
func (s *Session) CreateTTL(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	sp, err := s.checkPath("create ttl", path)
	if err != nil {
		return "", err
	}
	p, err := do(ctx, s, "create ttl", path, func(c *zk.Conn) (string, error) {
		return c.CreateTTL(sp, data, flags, s.acl(acl), ttl)
	})
	if err != nil {
		return "", err
	}
	return s.root.fromServer(p), nil
}

// Get returns a node's data and stat.
func (s *Session) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	sp, err := s.checkPath("get", path)
	if err != nil {
		return nil, nil, err
	}
	type r struct {
		data []byte
		stat *zk.Stat
	}
	v, err := do(ctx, s, "get", path, func(c *zk.Conn) (r, error) {
		d, st, err := c.Get(sp)
		return r{d, st}, err
	})
	return v.data, v.stat, err
}

// GetW is Get that also sets a data watch, fired once by the node's next
// change or deletion.
func (s *Session) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	sp, err := s.checkPath("get", path)
	if err != nil {
		return nil, nil, nil, err
	}
	type r struct {
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	v, err := do(ctx, s, "get", path, func(c *zk.Conn) (r, error) {
		d, st, ch, err := c.GetW(sp)
		return r{d, st, ch}, err
	})
	return v.data, v.stat, s.watch(v.ch), err
}

// Set writes a node's data if its version is version (-1: any version).
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	sp, err := s.checkPath("set", path)
	if err != nil {
		return nil, err
	}
	return do(ctx, s, "set", path, func(c *zk.Conn) (*zk.Stat, error) {
		return c.Set(sp, data, version)
	})
}

// Delete deletes a node if its version is version (-1: any version).
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	sp, err := s.checkPath("delete", path)
	if err != nil {
		return err
	}
	_, err = do(ctx, s, "delete", path, func(c *zk.Conn) (struct{}, error) {
		return struct{}{}, c.Delete(sp, version)
	})
	return err
}

// Exists reports whether a node exists, with its stat when it does.
func (s *Session) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	sp, err := s.checkPath("exists", path)
	if err != nil {
		return false, nil, err
	}
	type r struct {
		ok   bool
		stat *zk.Stat
	}
	v, err := do(ctx, s, "exists", path, func(c *zk.Conn) (r, error) {
		ok, st, err := c.Exists(sp)
		return r{ok, st}, err
	})
	return v.ok, v.stat, err
}

// ExistsW is Exists that also sets a watch, fired once by the node's
// creation, change or deletion.
func (s *Session) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	sp, err := s.checkPath("exists", path)
	if err != nil {
		return false, nil, nil, err
	}
	type r struct {
		ok   bool
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	v, err := do(ctx, s, "exists", path, func(c *zk.Conn) (r, error) {
		ok, st, ch, err := c.ExistsW(sp)
		return r{ok, st, ch}, err
	})
	return v.ok, v.stat, s.watch(v.ch), err
}

// Children returns the names of a node's children, in no order.
func (s *Session) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	sp, err := s.checkPath("children", path)
	if err != nil {
		return nil, nil, err
	}
	type r struct {
		names []string
		stat  *zk.Stat
	}
	v, err := do(ctx, s, "children", path, func(c *zk.Conn) (r, error) {
		names, st, err := c.Children(sp)
		return r{names, st}, err
	})
	return v.names, v.stat, err
}

// ChildrenW is Children that also sets a watch, fired once by the next
// child created or deleted, or by the node's deletion.
func (s *Session) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	sp, err := s.checkPath("children", path)
	if err != nil {
		return nil, nil, nil, err
	}
	type r struct {
		names []string
		stat  *zk.Stat
		ch    <-chan zk.Event
	}
	v, err := do(ctx, s, "children", path, func(c *zk.Conn) (r, error) {
		names, st, ch, err := c.ChildrenW(sp)
		return r{names, st, ch}, err
	})
	return v.names, v.stat, s.watch(v.ch), err
}

// Sync asks the server to catch up with the leader before the next read
// on this session (a no-op on a standalone server).
func (s *Session) Sync(ctx context.Context, path string) error {
	sp, err := s.checkPath("sync", path)
	if err != nil {
		return err
	}
	_, err = do(ctx, s, "sync", path, func(c *zk.Conn) (string, error) { return c.Sync(sp) })
	return err
}

// GetACL returns a node's ACL.
func (s *Session) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	sp, err := s.checkPath("get acl", path)
	if err != nil {
		return nil, nil, err
	}
	type r struct {
		acl  []zk.ACL
		stat *zk.Stat
	}
	v, err := do(ctx, s, "get acl", path, func(c *zk.Conn) (r, error) {
		acl, st, err := c.GetACL(sp)
		return r{acl, st}, err
	})
	return v.acl, v.stat, err
}

// SetACL sets a node's ACL if its ACL version is version (-1: any).
func (s *Session) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	sp, err := s.checkPath("set acl", path)
	if err != nil {
		return nil, err
	}
	return do(ctx, s, "set acl", path, func(c *zk.Conn) (*zk.Stat, error) {
		return c.SetACL(sp, acl, version)
	})
}

// Multi runs ops — *zk.CreateRequest, *zk.DeleteRequest,
// *zk.SetDataRequest, *zk.CheckVersionRequest — as one transaction: all
// or none. The requests are not modified. A nil Acl in a CreateRequest
// means the Session's Options.ACL.
func (s *Session) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	sops := make([]any, len(ops))
	for i, op := range ops {
		var err error
		switch op := op.(type) {
		case *zk.CreateRequest:
			c := *op
			c.Acl = s.acl(c.Acl)
			c.Path, err = s.checkPath("multi create", op.Path)
			sops[i] = &c
		case *zk.DeleteRequest:
			c := *op
			c.Path, err = s.checkPath("multi delete", op.Path)
			sops[i] = &c
		case *zk.SetDataRequest:
			c := *op
			c.Path, err = s.checkPath("multi set", op.Path)
			sops[i] = &c
		case *zk.CheckVersionRequest:
			c := *op
			c.Path, err = s.checkPath("multi check", op.Path)
			sops[i] = &c
		default:
			err = fmt.Errorf("recipe: multi: op %d: unsupported type %T", i, op)
		}
		if err != nil {
			return nil, err
		}
	}
	res, err := do(ctx, s, "multi", fmt.Sprintf("(%d ops)", len(ops)), func(c *zk.Conn) ([]zk.MultiResponse, error) {
		return c.Multi(sops...)
	})
	for i := range res {
		if res[i].String != "" {
			res[i].String = s.root.fromServer(res[i].String)
		}
	}
	return res, err
}

// EnsurePath creates path and its missing ancestors as persistent nodes
// with empty data, and succeeds if they exist already.
func (s *Session) EnsurePath(ctx context.Context, path string) error {
	if _, err := s.checkPath("ensure path", path); err != nil {
		return err
	}
	return s.ensureServerPath(ctx, s.root.toServer(path), zk.FlagPersistent)
}

// ensureServerPath creates a server path and its missing ancestors, each
// with one attempt per node; existing nodes are fine. It works in the
// server's namespace, so that Dial can create the chroot itself.
func (s *Session) ensureServerPath(ctx context.Context, serverPath string, flag int32) error {
	if serverPath == "/" {
		return nil
	}
	// Most of the time the whole path exists: one round trip.
	ok, err := do(ctx, s, "exists", serverPath, func(c *zk.Conn) (bool, error) {
		ok, _, err := c.Exists(serverPath)
		return ok, err
	})
	if err != nil || ok {
		return err
	}
	for i := 1; i <= len(serverPath); i++ {
		if i < len(serverPath) && serverPath[i] != '/' {
			continue
		}
		p := serverPath[:i]
		_, err := do(ctx, s, "create", p, func(c *zk.Conn) (string, error) {
			if flag == zk.FlagContainer {
				return c.CreateContainer(p, nil, flag, s.opts.ACL)
			}
			return c.Create(p, nil, flag, s.opts.ACL)
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
