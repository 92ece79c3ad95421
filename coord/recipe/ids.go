package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// IDs is the naming service of the source documents: globally unique IDs
// such as type2-job-0000000003, made from ZooKeeper's sequential nodes.
// For an ID of type T, NextID creates a sequential node <root>/T/<name>-
// and builds the ID from the sequence number the server appended:
// T-<name>-<seq>.
//
// The node is deleted once its number is read, so the type's node does
// not grow a child per ID ever issued. ZooKeeper numbers a node's
// sequential children by counting the creations under it, deletions
// aside, so IDs are unique and increasing per type, and consecutive
// unless a create is retried after a connection loss (that skips a
// number) or someone else creates children there. Names carry a
// protected-create marker, so a retried create finds and deletes the node
// it may already have made.
//
// Uniqueness rests on the type nodes: they are persistent and must never
// be deleted — a re-created type node starts counting from 0 again. The
// sequence is a signed 32-bit number: 2³¹ IDs per type.
type IDs struct {
	s    *Session
	root string
	name string

	mu    sync.Mutex
	ready map[string]bool // type nodes known to exist
}

// NewIDs returns the naming service whose type nodes live under root,
// naming IDs T-<name>-<seq> (NewIDs(s, "/naming", "job") gives
// type2-job-0000000003).
func NewIDs(s *Session, root, name string) *IDs {
	return &IDs{s: s, root: root, name: name, ready: map[string]bool{}}
}

// NextID returns a new ID of type typ, unique among all IDs of that type
// this naming service ever issues, and larger than every one issued
// before it was called.
func (g *IDs) NextID(ctx context.Context, typ string) (string, error) {
	if err := checkName("id type", typ); err != nil {
		return "", fmt.Errorf("recipe: next id under %s: %w", g.root, err)
	}
	if err := checkName("id", g.name); err != nil {
		return "", fmt.Errorf("recipe: next id under %s: %w", g.root, err)
	}
	dir := zpath.Join(g.root, typ)
	if err := g.ensure(ctx, dir, typ); err != nil {
		return "", err
	}
	marker := protectedPrefix + newUUID() + "-"
	p, err := g.s.createMarked(ctx, dir, marker, marker+g.name+"-", nil, zk.FlagSequence, nil, false)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			g.mu.Lock()
			delete(g.ready, typ)
			g.mu.Unlock()
		}
		return "", fmt.Errorf("recipe: next id of type %s under %s: %w", typ, g.root, err)
	}
	_, node := zpath.Split(p)
	seq := node[len(node)-seqLen:]
	if err := g.s.deleteNode(ctx, p); err != nil {
		// The ID is good; only its node stays behind.
		g.s.log.Warn("naming service: node of an issued id not deleted", "path", p, "err", err)
	}
	return typ + "-" + g.name + "-" + seq, nil
}

// ensure creates the type node the first time this IDs sees the type.
func (g *IDs) ensure(ctx context.Context, dir, typ string) error {
	g.mu.Lock()
	ok := g.ready[typ]
	g.mu.Unlock()
	if ok {
		return nil
	}
	if err := g.s.Retry(ctx, func() error { return g.s.EnsurePath(ctx, dir) }); err != nil {
		return fmt.Errorf("recipe: next id of type %s under %s: %w", typ, g.root, err)
	}
	g.mu.Lock()
	g.ready[typ] = true
	g.mu.Unlock()
	return nil
}
