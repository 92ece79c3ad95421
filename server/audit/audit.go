// Package audit is the console's audit log: one persistent sequential
// node per entry (who, what, when, before and after, outcome) below a
// directory in the coordination service, so every console of a cluster
// writes to and shows the same log. A console keeps two such logs, two
// streams of one format: the audit stream (every mutating action) and
// the security stream (failed logins, lockouts, refusals, untrusted
// nodes).
//
// Retention is by count, by age and by actor. An entry's node name
// carries its time and a tag of its actor (e-<unix>-<tag>-<seq>), so
// retention is decided from one listing without reading any entry:
// walking from the newest, an entry goes when it is older than MaxAge,
// when its actor already has PerActor newer entries, or when Keep newer
// entries are kept. One actor's flood therefore only pushes out its own
// older entries: others' go only when more than Keep/PerActor actors
// flood at once.
//
// The retention is the console's (its flags). Other writers, as shepherd
// ctl, follow it: the console publishes it in the data of the log's
// directory at each trim, and a follower trims by what is published
// there (Options.Follow).
//
// Entries hold what the console already redacted (no passwords); this
// package stores and lists them and never decides what is allowed.
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
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
	// Reason says why a security event was raised.
	Reason string `json:"reason,omitempty"`
	// Actor is whom retention charges the entry to: the user, or for a
	// request nobody authenticated, its address. Empty: User.
	Actor string `json:"actor,omitempty"`
	// Changes are the fields Before and After differ in (Diff), computed
	// when listed, never stored.
	Changes []Change `json:"changes,omitempty"`
}

// MaxEntry bounds one entry's encoding; the before and after of a larger
// one are dropped (and said so) rather than the entry.
const MaxEntry = 64 << 10

// Options are a log's retention and clock.
type Options struct {
	// Keep is how many entries are kept at most; 0 is 10000.
	Keep int
	// MaxAge is how long an entry is kept at most; 0 is 90 days.
	MaxAge time.Duration
	// PerActor is how many entries one actor keeps at most; 0 is Keep/10.
	PerActor int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger; nil is slog.Default().
	Logger *slog.Logger
	// Follow is for a writer that does not own the log's retention, as
	// shepherd ctl, which writes to the console's log without knowing the
	// console's flags: it trims by the retention the owner published last
	// (see Published), and by Keep, MaxAge and PerActor only while none is.
	// An owner (Follow false) publishes its retention at each trim.
	Follow bool
}

// Published is the retention an owner keeps in the data of the log's
// directory, for the followers that write to the same log.
type Published struct {
	Keep          int   `json:"keep"`
	MaxAgeSeconds int64 `json:"maxAgeSeconds"`
	PerActor      int   `json:"perActor"`
}

// Log writes and lists entries below a directory.
type Log struct {
	s    *recipe.Session
	dir  string
	opts Options
}

// New returns the log in dir with opts' retention.
func New(s *recipe.Session, dir string, opts Options) *Log {
	if opts.Keep <= 0 {
		opts.Keep = 10000
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 90 * 24 * time.Hour
	}
	if opts.PerActor <= 0 {
		opts.PerActor = max(1, opts.Keep/10)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Log{s: s, dir: dir, opts: opts}
}

// Write appends e, then trims the log to its retention.
func (l *Log) Write(ctx context.Context, e Entry) error {
	e.Version = 1
	e.Changes = nil
	if e.Time.IsZero() {
		e.Time = l.opts.Now().UTC()
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
		name, err = l.s.Create(ctx, l.dir+"/"+nodePrefix(e), data, zk.FlagPersistent|zk.FlagSequence, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit: write %s of %s by %s to %s: %w", e.Action, e.Target, e.User, l.dir, err)
	}
	// Trim every 16th entry: one listing per 16 writes.
	if parseName(name).seq%16 == 0 {
		l.trim(ctx)
	}
	return nil
}

// nodePrefix is the name of e's node before its sequence number.
func nodePrefix(e Entry) string {
	actor := e.Actor
	if actor == "" {
		actor = e.User
	}
	return "e-" + strconv.FormatInt(e.Time.Unix(), 10) + "-" + actorTag(actor) + "-"
}

// actorTag is a short fixed-size name of an actor, safe in a node name.
func actorTag(actor string) string {
	sum := sha256.Sum256([]byte(actor))
	return hex.EncodeToString(sum[:4])
}

// node is what an entry's name tells: e-<unix>-<tag>-<seq>; entries
// written before retention by age and actor are e-<seq>, with no time
// (never too old) and one shared tag.
type node struct {
	name string
	unix int64 // 0: unknown
	tag  string
	seq  int
}

func parseName(name string) node {
	n := node{name: name}
	if len(name) < 10 {
		return n
	}
	n.seq, _ = strconv.Atoi(name[len(name)-10:])
	parts := strings.Split(strings.TrimPrefix(name[:len(name)-10], "e-"), "-")
	if len(parts) == 3 {
		n.unix, _ = strconv.ParseInt(parts[0], 10, 64)
		n.tag = parts[1]
	}
	return n
}

// trim deletes the entries beyond the retention; failures are logged
// and retried at the next trim.
func (l *Log) trim(ctx context.Context) {
	opts := l.retention(ctx)
	nodes, err := l.nodes(ctx)
	if err != nil {
		l.opts.Logger.Warn("audit: listing for retention failed", "dir", l.dir, "err", err)
		return
	}
	for _, n := range expired(nodes, opts) {
		if err := l.s.Delete(ctx, l.dir+"/"+n, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			l.opts.Logger.Warn("audit: deleting an entry beyond retention failed", "dir", l.dir, "node", n, "err", err)
			return
		}
	}
}

// retention is the retention trim applies: an owner's own, which it
// publishes (when the directory holds another); a follower's the
// published one, or its own while none is (or it cannot be read).
func (l *Log) retention(ctx context.Context) Options {
	own := Published{Keep: l.opts.Keep, MaxAgeSeconds: int64(l.opts.MaxAge / time.Second), PerActor: l.opts.PerActor}
	var data []byte
	err := l.s.Retry(ctx, func() (err error) {
		data, _, err = l.s.Get(ctx, l.dir)
		return err
	})
	var p Published
	valid := err == nil && json.Unmarshal(data, &p) == nil && p.Keep > 0 && p.MaxAgeSeconds > 0 && p.PerActor > 0
	if !l.opts.Follow {
		if err == nil && p != own {
			enc, _ := json.Marshal(own)
			if _, err := l.s.Set(ctx, l.dir, enc, -1); err != nil {
				l.opts.Logger.Warn("audit: publishing the retention failed", "dir", l.dir, "err", err)
			}
		}
		return l.opts
	}
	if !valid {
		return l.opts
	}
	opts := l.opts
	opts.Keep, opts.MaxAge, opts.PerActor = p.Keep, time.Duration(p.MaxAgeSeconds)*time.Second, p.PerActor
	return opts
}

// expired are the names of the entries retention deletes, of nodes
// sorted oldest first: walking from the newest, those older than MaxAge,
// those of an actor with PerActor newer ones, and those with Keep newer
// ones kept.
func expired(nodes []node, opts Options) []string {
	oldest := opts.Now().Add(-opts.MaxAge).Unix()
	perActor := map[string]int{}
	kept := 0
	var out []string
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		// An entry from before actor tags has no actor to charge: only
		// the count applies to it, so an upgrade deletes nothing at once.
		overQuota := n.tag != "" && perActor[n.tag] >= opts.PerActor
		if (n.unix != 0 && n.unix < oldest) || overQuota || kept >= opts.Keep {
			out = append(out, n.name)
			continue
		}
		perActor[n.tag]++
		kept++
	}
	return out
}

// nodes lists the entries, oldest first.
func (l *Log) nodes(ctx context.Context) ([]node, error) {
	var names []string
	err := l.s.Retry(ctx, func() (err error) {
		names, _, err = l.s.Children(ctx, l.dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	nodes := make([]node, len(names))
	for i, n := range names {
		nodes[i] = parseName(n)
	}
	slices.SortFunc(nodes, func(a, b node) int { return a.seq - b.seq })
	return nodes, err
}

// List returns the newest entries first, at most limit of them, older
// than the entry named before ("" for the newest).
func (l *Log) List(ctx context.Context, limit int, before string) ([]Entry, error) {
	nodes, err := l.nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", l.dir, err)
	}
	if before != "" {
		seq := parseName(before).seq
		i, _ := slices.BinarySearchFunc(nodes, seq, func(n node, seq int) int { return n.seq - seq })
		nodes = nodes[:i]
	}
	out := []Entry{}
	for i := len(nodes) - 1; i >= 0 && len(out) < limit; i-- {
		name := nodes[i].name
		var data []byte
		err := l.s.Retry(ctx, func() (err error) {
			data, _, err = l.s.Get(ctx, l.dir+"/"+name)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // trimmed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("audit: read %s/%s: %w", l.dir, name, err)
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil {
			e = Entry{Action: "undecodable", Target: name}
		}
		e.Seq = name
		if e.Before != nil || e.After != nil {
			e.Changes = Diff(e.Before, e.After)
		}
		out = append(out, e)
	}
	return out, nil
}
