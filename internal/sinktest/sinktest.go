// Package sinktest is what the tests of the replication sinks share: the
// MariaDB source logging column names, a replicator of one task writing
// to a sink, a Run in the background, and waits on the checkpoint. Test
// support only: no production package imports it.
package sinktest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
)

// Source is the MariaDB source a test binary's tests share.
type Source struct {
	db  *testpeer.MariaDB
	dir string
	err error
}

// LaunchSource starts the shared source, logging column names
// (binlog_row_metadata=FULL) as the event sinks need, when MariaDB is
// installed; Get reports it missing otherwise. TestMain calls it before
// m.Run and Close after.
func LaunchSource(prefix string) *Source {
	s := &Source{}
	if _, ok := testpeer.MariaDBAvailable(); !ok {
		return s
	}
	if s.dir, s.err = os.MkdirTemp("", prefix); s.err != nil {
		return s
	}
	s.db, s.err = testpeer.LaunchMariaDB(s.dir, testpeer.MariaDBOptions{
		ExtraArgs: []string{"--binlog-row-metadata=FULL", "--default-time-zone=+05:30"},
	})
	return s
}

// Get returns the source, or ends the test when MariaDB is unavailable
// (a skip, or a failure under SHEPHERD_IT=1).
func (s *Source) Get(t testing.TB) *testpeer.MariaDB {
	t.Helper()
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	if s.err != nil || s.db == nil {
		t.Fatalf("shared MariaDB source did not start: %v", s.err)
	}
	return s.db
}

// Close stops the source and removes its files.
func (s *Source) Close() {
	if s.db != nil {
		s.db.Close()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// TaskName is a task name unique to the test.
func TaskName(t testing.TB) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}

// Config is the replication of databases dbs of source into sink.
func Config(t testing.TB, source *testpeer.MariaDB, sink replication.Sink, dbs ...string) replication.Config {
	return replication.Config{
		Task:            TaskName(t),
		Source:          replication.Endpoint{Host: source.Host(), Port: source.Port(), User: "root"},
		Include:         dbs,
		Sink:            sink,
		HeartbeatPeriod: 200 * time.Millisecond,
		MaxBackoff:      500 * time.Millisecond,
		Logger:          coordtest.Logger(t),
	}
}

// Open opens a replicator, closed when the test ends.
func Open(t testing.TB, cfg replication.Config) *replication.Replicator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := replication.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// CurrentPosition is the source's position now.
func CurrentPosition(t testing.TB, r *replication.Replicator) replication.Position {
	t.Helper()
	p, err := r.ResolveStart(context.Background(), "current")
	if err != nil {
		t.Fatalf("ResolveStart(current): %v", err)
	}
	return p
}

// Run is a Run in the background.
type Run struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	last   replication.Progress
	states map[replication.State]int
}

// StartRun starts r.Run from from with epoch and owner, stopped when the
// test ends.
func StartRun(t testing.TB, r *replication.Replicator, from replication.Position, epoch int64, owner string) *Run {
	ctx, cancel := context.WithCancel(context.Background())
	rn := &Run{cancel: cancel, done: make(chan error, 1), states: map[replication.State]int{}}
	go func() {
		rn.done <- r.Run(ctx, from, epoch, owner, func(p replication.Progress) {
			rn.mu.Lock()
			defer rn.mu.Unlock()
			rn.last = p
			rn.states[p.State]++
		})
	}()
	t.Cleanup(func() { rn.Stop() })
	return rn
}

// Stop cancels the Run and returns what it returned (nil when it
// returned because of the cancel).
func (rn *Run) Stop() error {
	rn.cancel()
	select {
	case err := <-rn.done:
		rn.done <- err
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		return errors.New("Run did not return within 30s of cancel")
	}
}

// Returned reports whether the Run has returned, and what.
func (rn *Run) Returned() (bool, error) {
	select {
	case err := <-rn.done:
		rn.done <- err
		return true, err
	default:
		return false, nil
	}
}

// Saw reports whether the Run has reported state s.
func (rn *Run) Saw(s replication.State) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.states[s] > 0
}

// WaitCaughtUp waits until the checkpoint covers every transaction the
// source has logged so far; rn, when not nil, must not return meanwhile.
func WaitCaughtUp(t testing.TB, r *replication.Replicator, source *testpeer.MariaDB, rn *Run) {
	t.Helper()
	var want string
	if err := source.DB(t).QueryRow("SELECT @@gtid_binlog_pos").Scan(&want); err != nil {
		t.Fatalf("read source gtid_binlog_pos: %v", err)
	}
	coordtest.WaitFor(t, 60*time.Second, "checkpoint catching up with source GTID "+want, func() error {
		if rn != nil {
			if done, err := rn.Returned(); done {
				return fmt.Errorf("Run returned: %w", err)
			}
		}
		cp, ok, err := r.TargetCheckpoint(context.Background())
		if err != nil || !ok {
			return fmt.Errorf("checkpoint %v, %v", ok, err)
		}
		if c, ok := replication.ComparePositions(replication.FlavorMariaDB, replication.Position{GTID: cp.Position.GTID}, replication.Position{GTID: want}); !ok || c < 0 {
			return fmt.Errorf("checkpoint at %s", cp.Position)
		}
		return nil
	})
}

// WaitCommits waits until the checkpoint has been seen moving moves
// times.
func WaitCommits(t testing.TB, r *replication.Replicator, moves int) {
	t.Helper()
	var last replication.Position
	seen := -1
	coordtest.WaitFor(t, 30*time.Second, "checkpoint moving", func() error {
		cp, _, err := r.TargetCheckpoint(context.Background())
		if err != nil {
			return err
		}
		if cp.Position != last {
			seen++
			last = cp.Position
		}
		if seen < moves {
			return fmt.Errorf("checkpoint seen moving %d times, at %s", seen, last)
		}
		return nil
	})
}

// SQLConn is one connection to db, for statements that must share a
// session (SET timestamp).
func SQLConn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// DropDB drops a database on the source now and when the test ends.
func DropDB(t testing.TB, source *testpeer.MariaDB, db string) {
	drop := func() { source.DB(t).Exec("DROP DATABASE IF EXISTS " + db) }
	drop()
	t.Cleanup(drop)
}
