package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// ErrNodeInTheWay reports a persistent node where a recipe wants to
// create an ephemeral one of the same name: it will never go away by
// itself, so waiting for it is pointless. Delete it, or pick another name.
var ErrNodeInTheWay = errors.New("recipe: a persistent node is in the way")

// Member is one member of a group: its node's name and data.
type Member struct {
	Name string
	Data []byte
}

// Membership is one process's registration in a group: an ephemeral node
// <group>/<member> that lives as long as the process wants it to and its
// session lasts. When the session is lost the Membership registers again
// on the new session, and it does the same if someone deletes the node.
type Membership struct {
	s    *Session
	node string
	data []byte

	cancel context.CancelFunc
	done   chan struct{} // closed when the keeper has returned
}

// Join registers member, with data, in the group at path group (created
// as a persistent node if missing), and keeps it registered until Leave.
// It returns once the node exists. If a node of that name is left by an
// earlier session — a restarted process whose old session has not expired
// yet — Join waits for it to go, as long as ctx allows. ctx bounds only
// the registration; the Membership lasts until Leave or the Session's
// Close.
func Join(ctx context.Context, s *Session, group, member string, data []byte) (*Membership, error) {
	if err := checkName("member", member); err != nil {
		return nil, fmt.Errorf("recipe: join %s: %w", group, err)
	}
	if err := s.Retry(ctx, func() error { return s.EnsurePath(ctx, group) }); err != nil {
		return nil, fmt.Errorf("recipe: join %s: %w", group, err)
	}
	node := zpath.Join(group, member)
	genDone, err := s.claimEphemeral(ctx, node, data)
	if err != nil {
		return nil, fmt.Errorf("recipe: join %s as %s: %w", group, member, err)
	}
	kctx, cancel := context.WithCancel(context.Background())
	m := &Membership{s: s, node: node, data: data, cancel: cancel, done: make(chan struct{})}
	go m.keep(kctx, genDone)
	return m, nil
}

// keep re-registers the member whenever its node goes: with its session,
// or deleted by someone else.
func (m *Membership) keep(ctx context.Context, genDone <-chan struct{}) {
	defer close(m.done)
	s := m.s
	for {
		ok, st, ch, err := s.Retrying().ExistsW(ctx, m.node)
		switch {
		case ctx.Err() != nil || errors.Is(err, ErrClosed):
			return
		case err == nil && ok && st.EphemeralOwner == s.ID():
			select {
			case <-ch:
				continue
			case <-genDone:
			case <-ctx.Done():
				return
			}
		case err != nil:
			s.log.Warn("group member: cannot watch own node", "path", m.node, "err", err)
			if s.pause(ctx, s.opts.Retry.MaxDelay) != nil {
				return
			}
			continue
		}
		s.log.Info("group member: registering again", "path", m.node)
		genDone, err = s.claimEphemeral(ctx, m.node, m.data)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			s.log.Warn("group member: cannot register again", "path", m.node, "err", err)
			if s.pause(ctx, s.opts.Retry.MaxDelay) != nil {
				return
			}
			_, genDone = s.generation()
		}
	}
}

// Path returns the path of the member's node.
func (m *Membership) Path() string { return m.node }

// Leave deletes the member's node and stops keeping it. A node left by a
// lost session goes with that session.
func (m *Membership) Leave(ctx context.Context) error {
	m.cancel()
	<-m.done
	if err := deleteOwn(ctx, m.s, m.node); err != nil {
		return fmt.Errorf("recipe: leave %s: %w", m.node, err)
	}
	return nil
}

// Members returns the members of the group at path group, sorted by name.
// A group that does not exist has no members.
func Members(ctx context.Context, s *Session, group string) ([]Member, error) {
	names, _, err := s.Retrying().Children(ctx, group)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recipe: members of %s: %w", group, err)
	}
	ms, err := readMembers(ctx, s, group, names, nil)
	if err != nil {
		return nil, fmt.Errorf("recipe: members of %s: %w", group, err)
	}
	return ms, nil
}

// readMembers returns the members named, sorted, with their data: from
// known when there, read otherwise. Members that left meanwhile are left
// out.
func readMembers(ctx context.Context, s *Session, group string, names []string, known map[string][]byte) ([]Member, error) {
	slices.Sort(names)
	ms := make([]Member, 0, len(names))
	for _, n := range names {
		if d, ok := known[n]; ok {
			ms = append(ms, Member{Name: n, Data: d})
			continue
		}
		data, _, err := s.Retrying().Get(ctx, zpath.Join(group, n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ms = append(ms, Member{Name: n, Data: data})
	}
	return ms, nil
}

// GroupWatcher keeps the live member list of a group. It sets one watch
// on the group's children at a time, and reads the data of members it
// has not seen before (a member's data is read once, when it joins).
type GroupWatcher struct {
	s     *Session
	group string

	changes chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	members []Member
}

// WatchGroup reads the members of the group at path group and follows
// them until ctx ends or Close is called. It returns once the first list
// is read.
func WatchGroup(ctx context.Context, s *Session, group string) (*GroupWatcher, error) {
	if _, err := s.checkPath("watch group", group); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &GroupWatcher{s: s, group: group, changes: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	var ch <-chan zk.Event
	err := s.Retry(ctx, func() (err error) {
		ch, err = g.read(ctx)
		return err
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("recipe: watch group %s: %w", group, err)
	}
	wakeUp(g.changes)
	go func() {
		defer close(g.done)
		defer close(g.changes)
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
		err := s.follow(ctx, "group "+group, g.read)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("group watcher stopped", "group", group, "err", err)
		}
	}()
	return g, nil
}

// read lists the members with a children watch (an existence watch while
// the group node does not exist).
func (g *GroupWatcher) read(ctx context.Context) (<-chan zk.Event, error) {
	names, _, ch, err := g.s.ChildrenW(ctx, g.group)
	if errors.Is(err, zk.ErrNoNode) {
		ok, _, ech, err := g.s.ExistsW(ctx, g.group)
		if err != nil {
			return nil, err
		}
		if ok {
			return firedWatch, nil
		}
		g.set(nil)
		return ech, nil
	}
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	known := make(map[string][]byte, len(g.members))
	for _, m := range g.members {
		known[m.Name] = m.Data
	}
	g.mu.Unlock()
	ms, err := readMembers(ctx, g.s, g.group, names, known)
	if err != nil {
		return nil, err
	}
	g.set(ms)
	return ch, nil
}

func (g *GroupWatcher) set(ms []Member) {
	g.mu.Lock()
	same := slices.EqualFunc(ms, g.members, func(a, b Member) bool { return a.Name == b.Name })
	g.members = ms
	g.mu.Unlock()
	if !same {
		wakeUp(g.changes)
	}
}

// Members returns the members last read, sorted by name. The slice must
// not be modified.
func (g *GroupWatcher) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members
}

// Changes returns a channel that receives a signal after members join or
// leave, and is closed when the watcher stops. Signals coalesce; Members
// returns the latest list. The first list is signalled too. Changes is
// meant for one reader.
func (g *GroupWatcher) Changes() <-chan struct{} { return g.changes }

// Close stops following the group and waits until the watcher has
// stopped.
func (g *GroupWatcher) Close() {
	g.cancel()
	<-g.done
}

// claimEphemeral creates the ephemeral node at path, with data, in the
// current session, and returns the end channel of that session's
// generation. A node of the same name left by another session (an earlier
// one of ours, or another process's) is waited for until it goes; one of
// the current session — a create retried after a lost reply — is taken as
// ours.
func (s *Session) claimEphemeral(ctx context.Context, path string, data []byte) (<-chan struct{}, error) {
	warned := false
	for {
		_, genDone, err := s.awaitSession(ctx)
		if err != nil {
			return nil, err
		}
		id := s.ID()
		err = s.Retry(ctx, func() error {
			_, err := s.Create(ctx, path, data, zk.FlagEphemeral, nil)
			return err
		})
		if err == nil {
			return genDone, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
		var st *zk.Stat
		var ch <-chan zk.Event
		_, st, ch, err = s.Retrying().GetW(ctx, path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			return nil, err
		case st.EphemeralOwner == 0:
			return nil, fmt.Errorf("%w: %s", ErrNodeInTheWay, path)
		case st.EphemeralOwner == id:
			return genDone, nil
		}
		if !warned {
			s.log.Warn("waiting for another session's node to go", "path", path, "owner", sessionHex(st.EphemeralOwner))
			warned = true
		}
		select {
		case <-ch:
		case <-genDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, ErrClosed
		}
	}
}

// checkName checks that name can be one path segment.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %s name %q is not a valid node name", zk.ErrInvalidPath, what, name)
	}
	return nil
}
