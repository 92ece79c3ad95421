package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

const logrotateBin = "/usr/sbin/logrotate"

// rotateMode is one logrotate configuration under test.
type rotateMode struct {
	name      string
	directive string // the stanza's body besides rotate and missingok
	// delayCreate: the writers go on writing to the renamed file for a
	// few lines before creating the new one (nocreate: the application
	// creates its file when it reopens).
	delayCreate bool
}

var rotateModes = []rotateMode{
	{name: "create", directive: "create"},
	{name: "copytruncate", directive: "copytruncate"},
	{name: "nocreate", directive: "nocreate", delayCreate: true},
	{name: "compress", directive: "create\n  compress"},
	{name: "delaycompress", directive: "create\n  compress\n  delaycompress"},
	{name: "copytruncate-compress", directive: "copytruncate\n  compress"},
}

// rotLog is one log file of the test and the writers appending to it.
// Writers hold mu around each write and, under it, reopen the file when
// its path names another inode, as a logger that follows rotation does;
// rotations hold it too, so that no line falls into the window that
// copytruncate and compress leave between copying and truncating (or
// deleting), which no reader can close.
type rotLog struct {
	mode rotateMode
	path string
	uri  string

	mu      sync.Mutex
	f       *os.File
	ino     uint64
	late    int // lines to write to the renamed file before creating a new one (delayCreate)
	written []string
}

// write appends line, following rotation.
func (l *rotLog) write(line string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := os.Stat(l.path)
	switch {
	case err == nil && st.Sys().(*syscall.Stat_t).Ino != l.ino:
		if err := l.reopen(0); err != nil {
			return err
		}
	case os.IsNotExist(err) && l.mode.delayCreate && l.late > 0:
		l.late-- // a logger that has not reopened yet
	case os.IsNotExist(err) && l.mode.delayCreate:
		if err := l.reopen(os.O_CREATE); err != nil {
			return err
		}
	case err != nil && !os.IsNotExist(err):
		return err
	}
	if _, err := l.f.WriteString(line + "\n"); err != nil {
		return err
	}
	l.written = append(l.written, line)
	return nil
}

func (l *rotLog) reopen(flag int) error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|flag, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.ino = f, st.Sys().(*syscall.Stat_t).Ino
	return nil
}

func (l *rotLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.written)
}

// rotate runs the real logrotate on l with its own config and state.
func (l *rotLog) rotate(t *testing.T, dir string) {
	t.Helper()
	conf := filepath.Join(dir, l.mode.name+".conf")
	l.mu.Lock()
	defer l.mu.Unlock()
	out, err := exec.Command(logrotateBin, "-f", "-s", filepath.Join(dir, l.mode.name+".state"), conf).CombinedOutput()
	if err != nil {
		t.Fatalf("logrotate %s: %v\n%s", l.mode.name, err, out)
	}
	if _, err := os.Stat(l.path); os.IsNotExist(err) && l.mode.delayCreate {
		l.late = 5 // the logger reopens after a few more lines
	}
}

// verify checks that the outputs in dirs hold every line written to l
// exactly once.
func (l *rotLog) verify(dirs []string) error {
	l.mu.Lock()
	written := append([]string(nil), l.written...)
	l.mu.Unlock()
	if err := exactlyOnce(dirs, l.uri, written); err != nil {
		return fmt.Errorf("%s: %w", l.mode.name, err)
	}
	return nil
}

// waitStarted waits until a collector has read each of uris once: a new
// source starts at the file its glob matches when it is first read, and
// lines rotated away before that are not part of it. With sources moved
// among collectors as they join, that first read can come after the
// first rotation on a loaded machine.
func waitStarted(t *testing.T, s *recipe.Session, uris []string) {
	t.Helper()
	coordtest.WaitFor(t, 30*time.Second, "every source read once", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		names, _, err := s.Children(ctx, CollectorsPath)
		if err != nil {
			return err
		}
		started := map[string]bool{}
		for _, n := range names {
			data, _, err := s.Get(ctx, StatusPath(n))
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			var st Status
			if err := decode(StatusPath(n), data, &st); err != nil {
				return err
			}
			for uri, p := range st.Progress {
				started[uri] = started[uri] || p.Pos.Ino != 0
			}
		}
		for _, u := range uris {
			if !started[u] {
				return fmt.Errorf("%s: not read by any collector yet", u)
			}
		}
		return nil
	})
}

// TestLogrotateExactlyOnce drives the real logrotate binary in every mode
// of rotateModes over files that two writers each append to, with
// collector processes that are killed (SIGKILL) and stopped (SIGTERM) and
// come back in the middle, and checks line by line that every written
// line is collected exactly once.
func TestLogrotateExactlyOnce(t *testing.T) {
	_, err := os.Stat(logrotateBin)
	testpeer.Require(t, "logrotate", err == nil, fmt.Sprintf("%s: %v (Debian package logrotate)", logrotateBin, err))
	forEachTarget(t, func(t *testing.T, tg *target) {
		const (
			writers   = 2   // per file
			perWriter = 500 // lines
			rotations = 7
		)
		dir := t.TempDir()
		var logs []*rotLog
		for _, m := range rotateModes {
			l := &rotLog{mode: m, path: filepath.Join(dir, m.name+".log")}
			l.uri = "file://" + l.path
			if err := l.reopen(os.O_CREATE); err != nil {
				t.Fatal(err)
			}
			defer l.f.Close()
			conf := fmt.Sprintf("%s {\n  rotate 1000\n  missingok\n  %s\n}\n", l.path, m.directive)
			if err := os.WriteFile(filepath.Join(dir, m.name+".conf"), []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
		}
		s := dial(t, tg.addr)
		uris := make([]string, len(logs))
		for i, l := range logs {
			uris[i] = l.uri
		}
		addSources(t, s, uris)
		ps := newProcs(t, tg.addr)
		ps.start("r1", true)
		ps.start("r2", true)
		ps.start("r3", false)
		waitAssigned(t, s, len(logs), "start", func(map[string][]string) error { return nil })
		waitStarted(t, s, uris)

		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, len(logs)*writers)
		for _, l := range logs {
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perWriter; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if err := l.write(fmt.Sprintf("%s w%d line-%06d", l.mode.name, w, i)); err != nil {
							errs <- err
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				}()
			}
		}
		defer func() {
			close(stop)
			wg.Wait()
		}()
		// waitWritten waits until every file has n more lines than at
		// the call: rotations land among writes, not by the clock.
		waitWritten := func(n int) {
			base := make([]int, len(logs))
			for i, l := range logs {
				base[i] = l.count()
			}
			coordtest.WaitFor(t, 60*time.Second, "condition", func() error {
				for i, l := range logs {
					if c := l.count(); c < base[i]+n && c < writers*perWriter {
						return fmt.Errorf("%s: %d lines written, waiting for %d", l.mode.name, c, base[i]+n)
					}
				}
				return nil
			})
		}
		for r := 0; r < rotations; r++ {
			waitWritten(writers * perWriter / (rotations + 1))
			for _, l := range logs {
				l.rotate(t, dir)
			}
			switch r {
			case 2:
				ps.kill("r3")
			case 3:
				ps.stop("r2") // graceful: its sources move at once
			case 4:
				ps.start("r3", false)
				ps.start("r2", true)
			}
		}
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatalf("writer: %v", err)
		default:
		}
		for _, l := range logs {
			l.rotate(t, dir) // the last lines too go through a rotation
		}
		coordtest.WaitFor(t, 60*time.Second, "condition", func() error {
			var errs []string
			for _, l := range logs {
				if err := l.verify(ps.dirs()); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if len(errs) > 0 {
				return fmt.Errorf("%s", strings.Join(errs, "; "))
			}
			return nil
		})
		for _, nm := range []string{"r1", "r2", "r3"} {
			ps.stop(nm)
		}
		for _, l := range logs {
			if err := l.verify(ps.dirs()); err != nil {
				t.Fatalf("after stopping every collector: %v", err)
			}
		}
		t.Logf("%s: %d modes × %d lines through %d rotations, a kill and a stop: each collected once",
			tg.name, len(logs), writers*perWriter, rotations+1)
	})
}
