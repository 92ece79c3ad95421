package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// commitWriter writes a task's lastCommit for one term, fenced twice:
//
//   - every write is a multi whose first op checks that the writer's
//     instance node exists — it is ephemeral, so it is gone once the
//     writer's session is, whatever the writer believes;
//   - every write is conditioned on the version last read or written,
//     and after a conflict the stored epoch is read back: a newer term's
//     (larger epoch) means this writer is stale.
//
// A commitWriter is used by one goroutine at a time.
type commitWriter struct {
	s     *recipe.Session
	log   *slog.Logger
	path  string // lastCommit
	node  string // the writer's instance node
	epoch int64
	owner string

	version int32 // of the node as last read or written; -1 if absent
	last    LastCommit
	known   bool // version and last reflect the server
}

// maxCommitConflicts bounds the read-and-retry rounds of one write: each
// round reads a newer version, so only a storm of writers could exhaust it.
const maxCommitConflicts = 5

func newCommitWriter(s *recipe.Session, log *slog.Logger, path, node string, epoch int64, owner string) *commitWriter {
	return &commitWriter{s: s, log: log, path: path, node: node, epoch: epoch, owner: owner, version: -1}
}

// claim reads the current lastCommit and writes it back under this term's
// epoch and owner, so that from now on no older term can write it. It
// returns what was stored (exists false if nothing was).
func (w *commitWriter) claim(ctx context.Context) (LastCommit, bool, error) {
	if err := w.read(ctx); err != nil {
		return LastCommit{}, false, err
	}
	prev, existed := w.last, w.version >= 0
	lc := prev
	lc.Version = docVersion
	if err := w.write(ctx, lc); err != nil {
		return LastCommit{}, false, err
	}
	return prev, existed, nil
}

// read loads the stored lastCommit and checks its epoch.
func (w *commitWriter) read(ctx context.Context) error {
	data, st, err := w.s.Retrying().Get(ctx, w.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		w.version, w.last, w.known = -1, LastCommit{}, true
		return nil
	case err != nil:
		return fmt.Errorf("core: read %s: %w", w.path, err)
	}
	lc, err := ParseLastCommit(data)
	if err != nil && len(data) > 0 {
		// A damaged checkpoint is not a reason to stop: the target's own
		// checkpoint is authoritative, and the next write replaces it.
		w.log.Warn("ignoring unreadable lastCommit", "path", w.path, "err", err)
		lc = LastCommit{}
	}
	if lc.Epoch > w.epoch {
		return fmt.Errorf("%w: %s has epoch %d (owner %s), this term's is %d", ErrFenced, w.path, lc.Epoch, lc.Owner, w.epoch)
	}
	w.version, w.last, w.known = st.Version, lc, true
	return nil
}

// write stores lc (its owner and epoch set to this term's).
func (w *commitWriter) write(ctx context.Context, lc LastCommit) error {
	lc.Version, lc.Owner, lc.Epoch = docVersion, w.owner, w.epoch
	data := lc.Marshal()
	for range maxCommitConflicts {
		if !w.known {
			if err := w.read(ctx); err != nil {
				return err
			}
		}
		fence := &zk.CheckVersionRequest{Path: w.node, Version: -1}
		var op any = &zk.SetDataRequest{Path: w.path, Data: data, Version: w.version}
		if w.version < 0 {
			op = &zk.CreateRequest{Path: w.path, Data: data, Flags: zk.FlagPersistent}
		}
		res, err := w.s.Multi(ctx, fence, op)
		if err == nil {
			if w.version < 0 {
				w.version = 0
			} else {
				w.version = res[1].Stat.Version
			}
			w.last = lc
			return nil
		}
		if len(res) < 2 {
			// Connection trouble: the write may or may not have happened.
			// Read before the next write rather than trust the version.
			w.known = false
			return fmt.Errorf("core: write %s: %w", w.path, err)
		}
		switch {
		case errors.Is(res[0].Error, zk.ErrNoNode):
			return fmt.Errorf("%w: instance node %s is gone (session lost)", ErrFenced, w.node)
		case errors.Is(res[1].Error, zk.ErrBadVersion), errors.Is(res[1].Error, zk.ErrNodeExists):
			w.known = false // someone wrote meanwhile: read, check its epoch, retry
		default:
			return fmt.Errorf("core: write %s: %w", w.path, err)
		}
	}
	return fmt.Errorf("core: write %s: %d conflicting writes in a row", w.path, maxCommitConflicts)
}

// readLastCommit reads a task's lastCommit, for status displays. A node
// that exists but cannot be parsed gives exists and an error.
func readLastCommit(ctx context.Context, s *recipe.Session, path string) (lc LastCommit, exists bool, err error) {
	var data []byte
	data, _, err = s.Retrying().Get(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return LastCommit{}, false, nil
	}
	if err != nil {
		return LastCommit{}, false, err
	}
	lc, err = ParseLastCommit(data)
	return lc, true, err
}
