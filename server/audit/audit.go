// Package audit is the console's audit log: one persistent sequential
// node per mutating action (who, what, when, before and after, outcome)
// below a directory in the coordination service, so every console of a
// cluster writes to and shows the same log. Retention is a bounded count
// of entries: the oldest beyond it are deleted as new ones are written.
//
// Entries hold what the console already redacted (no passwords); this
// package stores and lists them and never decides what is allowed.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Entry is one audited action.
type Entry struct {
	Version int       `json:"version"`
	Seq     string    `json:"seq,omitempty"` // the node's name, set when listed
	Time    time.Time `json:"time"`
	User    string    `json:"user"`
	Role    string    `json:"role"`
	Via     string    `json:"via"` // "ui", "api" (token) or "ctl"
	Remote  string    `json:"remote,omitempty"`
	Action  string    `json:"action"` // e.g. task.stop
	Target  string    `json:"target"` // e.g. task/orders
	Before  any       `json:"before,omitempty"`
	After   any       `json:"after,omitempty"`
	Error   string    `json:"error,omitempty"` // empty: it succeeded
}

// MaxEntry bounds one entry's encoding; the before and after of a larger
// one are dropped (and said so) rather than the entry.
const MaxEntry = 64 << 10

// Log writes and lists entries below Dir.
type Log struct {
	s    *recipe.Session
	dir  string
	keep int
	log  *slog.Logger
}

// New returns the log in dir keeping the newest keep entries (0: 10000).
func New(s *recipe.Session, dir string, keep int, log *slog.Logger) *Log {
	if keep <= 0 {
		keep = 10000
	}
	if log == nil {
		log = slog.Default()
	}
	return &Log{s: s, dir: dir, keep: keep, log: log}
}

const prefix = "e-"

// Write appends e, then trims the log to its retention.
func (l *Log) Write(ctx context.Context, e Entry) error {
	e.Version = 1
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	data, err := json.Marshal(e)
	if err != nil || len(data) > MaxEntry {
		e.Before, e.After = nil, nil
		e.Target += " (before/after too large to keep)"
		data, _ = json.Marshal(e)
	}
	var name string
	err = l.s.Retry(ctx, func() error {
		if err := l.s.EnsurePath(ctx, l.dir); err != nil {
			return err
		}
		var err error
		name, err = l.s.Create(ctx, l.dir+"/"+prefix, data, zk.FlagPersistent|zk.FlagSequence, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit: write %s of %s by %s: %w", e.Action, e.Target, e.User, err)
	}
	// Trim every 16th entry: one listing per 16 writes.
	if seqOf(name)%16 == 0 {
		l.trim(ctx)
	}
	return nil
}

func seqOf(name string) int {
	var n int
	if len(name) >= 10 {
		fmt.Sscanf(name[len(name)-10:], "%d", &n)
	}
	return n
}

// trim deletes the oldest entries beyond the retention; failures are
// logged and retried at the next trim.
func (l *Log) trim(ctx context.Context) {
	names, err := l.names(ctx)
	if err != nil {
		l.log.Warn("audit: listing for retention failed", "dir", l.dir, "err", err)
		return
	}
	for _, n := range names[:max(0, len(names)-l.keep)] {
		if err := l.s.Delete(ctx, l.dir+"/"+n, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			l.log.Warn("audit: deleting an entry beyond retention failed", "node", n, "err", err)
			return
		}
	}
}

func (l *Log) names(ctx context.Context) ([]string, error) {
	var names []string
	err := l.s.Retry(ctx, func() (err error) {
		names, _, err = l.s.Children(ctx, l.dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(names) // sequence numbers are zero-padded
	return names, err
}

// List returns the newest entries first, at most limit of them, older
// than the entry named before ("" for the newest).
func (l *Log) List(ctx context.Context, limit int, before string) ([]Entry, error) {
	names, err := l.names(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", l.dir, err)
	}
	if before != "" {
		i, _ := slices.BinarySearch(names, before)
		names = names[:i]
	}
	out := []Entry{}
	for i := len(names) - 1; i >= 0 && len(out) < limit; i-- {
		var data []byte
		err := l.s.Retry(ctx, func() (err error) {
			data, _, err = l.s.Get(ctx, l.dir+"/"+names[i])
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // trimmed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", names[i], err)
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil {
			e = Entry{Action: "undecodable", Target: names[i]}
		}
		e.Seq = names[i]
		out = append(out, e)
	}
	return out, nil
}
