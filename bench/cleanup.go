package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// maxCleanupNodes bounds how many znodes cleanup will list; it is well
// above anything a workload creates (tree200k's default is 200 000).
const maxCleanupNodes = 2_000_000

// cleanup deletes the run's subtree, deepest level first, then
// /shepherd-bench itself if no other run is using it.
func (e *env) cleanup(ctx context.Context) error {
	if len(e.conns) == 0 {
		return fmt.Errorf("bench: %s: cleanup of %s: no session to the server", e.name, e.root)
	}
	levels, err := listLevels(e.conns[0], e.root)
	if err != nil {
		return fmt.Errorf("bench: %s: cleanup: %w", e.name, err)
	}
	for d := len(levels) - 1; d >= 0; d-- {
		level := levels[d]
		if err := e.forBatches(ctx, "cleanup", len(level), func(w *worker, lo, hi int) error {
			return deleteBatch(w.conn, level[lo:hi])
		}); err != nil {
			return err
		}
	}
	err = e.conns[0].Delete(benchRoot, -1)
	if err != nil && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("bench: %s: cleanup %s: %w", e.name, benchRoot, err)
	}
	return nil
}

// deleteBatch deletes paths in one multi. If that fails, typically because
// one is already gone (an ephemeral whose session ended), it deletes them
// one by one, ignoring the missing, so that any other error is reported
// for the path that caused it.
func deleteBatch(conn *zk.Conn, paths []string) error {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
	}
	if _, err := conn.Multi(ops...); err == nil {
		return nil
	}
	for _, p := range paths {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete %s: %w", p, err)
		}
	}
	return nil
}

// listLevels returns root's subtree breadth first, one slice per depth,
// root alone at depth 0.
func listLevels(conn *zk.Conn, root string) ([][]string, error) {
	levels := [][]string{{root}}
	total := 1
	for {
		var next []string
		for _, p := range levels[len(levels)-1] {
			children, _, err := conn.Children(p)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", p, err)
			}
			for _, c := range children {
				next = append(next, p+"/"+c)
			}
			total += len(children)
			if total > maxCleanupNodes {
				return nil, fmt.Errorf("subtree %s has more than %d znodes", root, maxCleanupNodes)
			}
		}
		if len(next) == 0 {
			return levels, nil
		}
		levels = append(levels, next)
	}
}
