package wal

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSnapshotsDuringAppends runs the server's access pattern: one pipeline
// goroutine appending and syncing batches and rolling now and then, while
// another takes snapshots, purges and reads stats. Run with -race.
func TestSnapshotsDuringAppends(t *testing.T) {
	e := newEnv(t)
	e.opts.SegmentBytes = 4 << 10
	s, _ := e.open()
	const total = 3000
	done := make(chan struct{})
	var wg sync.WaitGroup
	var pipeErr, snapErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(done)
		rng := rand.New(rand.NewPCG(1, 2))
		for z := int64(1); z <= total; {
			n := 1 + rng.Int64N(20)
			for end := min(z+n, total+1); z < end; z++ {
				if err := s.Append(z, payload(z)); err != nil {
					pipeErr = err
					return
				}
			}
			if err := s.Sync(); err != nil {
				pipeErr = err
				return
			}
			if rng.IntN(10) == 0 {
				if err := s.Roll(); err != nil {
					pipeErr = err
					return
				}
			}
		}
	}()
	snaps := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			z := s.LastZxid()
			if err := s.WriteSnapshot(z, func(w io.Writer) error {
				_, err := w.Write(snapshotBytes(z, 20<<10))
				return err
			}); err != nil {
				snapErr = err
				return
			}
			snaps++
			if err := s.Purge(3); err != nil {
				snapErr = err
				return
			}
			_ = s.Stats()
		}
	}()
	wg.Wait()
	if pipeErr != nil || snapErr != nil {
		t.Fatalf("pipeline: %v; snapshotter: %v", pipeErr, snapErr)
	}
	if snaps == 0 {
		t.Fatal("no snapshot was taken while appending")
	}
	st := s.Stats()
	if st.Appends != total || st.Snapshots != int64(snaps) {
		t.Fatalf("Stats %+v, want %d appends and %d snapshots", st, total, snaps)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, rec := e.open()
	checkSnapshot(t, rec, st.LastSnapshotZxid, 20<<10)
	checkRecords(t, rec.Records, zxidRange(st.LastSnapshotZxid+1, total))
	t.Logf("%d snapshots, %d syncs, %d segments left", snaps, st.Syncs, st.Segments)
}

// crashChildEnv names the directory the kill -9 child writes to.
const crashChildEnv = "WAL_CRASH_CHILD_DIR"

// TestCrashChild is the child process of TestKill9: it appends, syncs and
// snapshots until killed, reporting each synced zxid on stdout. Run
// directly (without the variable) it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		return
	}
	s, err := Open(Options{Dir: dir, SegmentBytes: 8 << 10, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recover()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Snapshot != nil {
		rec.Snapshot.Close()
	}
	out := bufio.NewWriter(os.Stdout)
	deadline := time.Now().Add(20 * time.Second) // bounded even if the parent never kills us
	for z := s.LastZxid() + 1; time.Now().Before(deadline); {
		for end := z + 7; z < end; z++ {
			if err := s.Append(z, payload(z)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "synced %d\n", z-1)
		out.Flush()
		if z%200 < 7 {
			if err := s.Roll(); err != nil {
				t.Fatal(err)
			}
			last := z - 1
			go s.WriteSnapshot(last, func(w io.Writer) error {
				_, err := w.Write(snapshotBytes(last, 30<<10))
				return err
			})
		}
	}
}

// TestKill9 kills a process that is appending as fast as it can, at a
// random moment, and checks that every record it was told is synced
// survives, twice over (the second run starts from the first's leftovers).
func TestKill9(t *testing.T) {
	dir := t.TempDir()
	var acked int64
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := acked + 1000 + int64(rand.IntN(1000))
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			v, ok := strings.CutPrefix(sc.Text(), "synced ")
			if !ok {
				continue
			}
			z, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			acked = z
			if acked >= target {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		io.Copy(io.Discard, stdout)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child was not killed (%v); it stopped at zxid %d; stderr:\n%s", round, err, acked, stderr.String())
		}

		s, err := Open(Options{Dir: dir, Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := s.Recover()
		if err != nil {
			t.Fatalf("round %d: recovery after kill -9: %v", round, err)
		}
		if rec.Snapshot != nil {
			checkSnapshot(t, rec, rec.SnapshotZxid, 30<<10)
			rec.Snapshot.Close()
		}
		recs := rec.Records
		if len(recs) == 0 || recs[0].Zxid != rec.SnapshotZxid+1 {
			t.Fatalf("round %d: records after snapshot %d start wrong: %d records", round, rec.SnapshotZxid, len(recs))
		}
		last := recs[len(recs)-1].Zxid
		if last < acked {
			t.Fatalf("round %d: recovered up to zxid %d but %d was reported synced", round, last, acked)
		}
		checkRecords(t, recs, zxidRange(rec.SnapshotZxid+1, last))
		s.Close()
		t.Logf("round %d: killed after zxid %d synced; recovered snapshot %d + %d records up to %d",
			round, acked, rec.SnapshotZxid, len(recs), last)
	}
}
