package recipe

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// WithNodePrefix names contender nodes <prefix><seq> — host1-0000000007
// for prefix "host1-" — instead of by the Mutex's Naming, for layouts
// that operators read, such as the source documents'
// instances/<host>-<seq>. An empty prefix keeps the Naming.
//
// Such names carry no unique marker, so a create cut off by a connection
// loss is recovered differently: the Mutex looks for a child named
// <prefix><ten digits> whose ephemeral owner is its own session, and
// leaves every other node alone (another process may use the same
// prefix). A session must therefore not have two contenders with the
// same prefix in one directory at once.
func WithNodePrefix(prefix string) MutexOption {
	return func(c *mutexConfig) { c.prefix = prefix }
}

// WithElectionNodePrefix names candidate nodes <prefix><seq>; see
// WithNodePrefix. The election directory is still created as the Naming
// (default KazooNaming: persistent) says.
func WithElectionNodePrefix(prefix string) ElectionOption {
	return func(c *electionConfig) { c.prefix = prefix }
}

// usePrefix makes the lock name its nodes <prefix><seq>.
func (l *lock) usePrefix(prefix string) {
	l.name = func() (string, string) { return prefix, prefix }
	l.byOwner = true
}

// createNode creates a contender node: marker-named, or (byOwner) found
// again by its owner after a cut-off create.
func (l *lock) createNode(ctx context.Context, marker, name string) (string, error) {
	if !l.byOwner {
		return l.s.createMarkedDir(ctx, l.dir, marker, name, l.data, zk.FlagEphemeralSequential, nil, l.dirFlag)
	}
	find := func(ctx context.Context) (string, error) { return l.s.findOwned(ctx, l.dir, name) }
	return l.s.createFinding(ctx, l.dir, name, l.data, zk.FlagEphemeralSequential, nil, l.dirFlag, find)
}

// findOwned returns the path of the child of dir named <prefix><seq>
// whose ephemeral owner is the live session, or "" if there is none. If
// there are several (see WithNodePrefix), the latest is the one the last
// create made.
func (s *Session) findOwned(ctx context.Context, dir, prefix string) (string, error) {
	children, _, err := s.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	id := s.ID()
	found := ""
	var foundSeq int32
	for _, c := range children {
		rest, ok := strings.CutPrefix(c, prefix)
		if !ok || len(rest) != seqLen {
			continue // another prefix that starts with ours: host1-a- for host1-
		}
		seq, ok := sequenceOf(c)
		if !ok || (found != "" && seq <= foundSeq) {
			continue
		}
		p := zpath.Join(dir, c)
		ok, st, err := s.Exists(ctx, p)
		if err != nil {
			return "", err
		}
		if ok && id != 0 && st.EphemeralOwner == id {
			found, foundSeq = p, seq
		}
	}
	return found, nil
}
