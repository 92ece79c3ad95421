package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// ensembleSessionTimeout is the session timeout of every process in the
// ensemble test: long enough to ride out a leader election on a busy
// machine, as production timeouts are.
const ensembleSessionTimeout = 4 * time.Second

// TestMySQLOnZooKeeperEnsemble runs Shepherd as it runs past one machine.
// A replication task starts on the bundled server and is moved onto a
// three-member Apache ZooKeeper ensemble the way docs/deploy.md says
// (stop the task, `ctl dump`, `ctl load`, `ctl task reset-epoch`, start it).
// There, every process given the full connect string, two hot-standby
// cores, three schedulers firing a job every second and three `ctl lock`
// holders work under a steady write load while the ensemble's leader is
// killed, the quorum re-forms, the old leader rejoins, and then a follower
// is killed. Through all of it: never two RUNNING instances of the task, no
// scheduled run executed twice in the same attempt, no two lock holders at
// once, and the target identical to the source at the end.
func TestMySQLOnZooKeeperEnsemble(t *testing.T) {
	bundled := targets[0]
	if bundled.Name != "shepherd" {
		t.Fatalf("targets[0] is %s, want the bundled server", bundled.Name)
	}
	bundled.Require(t)
	source, target := sharedMariaDB(t)
	ctx := coordtest.Context(t, 5*time.Minute)
	db := testDB("ensemble")
	createWorkloadSchema(t, db, source, target)
	task := "ens_" + db
	timeout := ensembleSessionTimeout.String()

	// On the bundled server: the task copies a first load, then is moved.
	old := chrootOf(t, bundled)
	oldAdmin := NewAdmin(dial(t, old, ensembleSessionTimeout), "")
	mustAdd(t, oldAdmin, mysqlSpec(task, db, source, target))
	first := startCoreProc(t, old, "a", "--task", task, "--session-timeout", timeout)
	waitOwner(t, oldAdmin, task, "a", StateRunning, 60*time.Second)
	if err := load(ctx, source.DB(t), db, 0, 2000, 100); err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, source, target, db, 90*time.Second)

	ens := testpeer.StartEnsemble(t, 3, testpeer.ZKOptions{TickTime: 500 * time.Millisecond})
	connect := ens.Connect()
	ctl(t, old, "task", "stop", task)
	coordtest.WaitFor(t, 60*time.Second, "the task to stop on the bundled server", func() error {
		ts, err := oldAdmin.Task(ctx, task)
		for _, in := range ts.Instances {
			if in.State.State == StateRunning {
				return fmt.Errorf("%s is RUNNING", in.Name)
			}
		}
		return err
	})
	first.stop()
	dump := filepath.Join(t.TempDir(), "replicator.json")
	if err := os.WriteFile(dump, []byte(ctl(t, old, "dump", "/mysql_replicator")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctl(t, connect, "load", dump)
	t.Log(ctl(t, connect, "task", "reset-epoch", task))
	ctl(t, connect, "task", "start", task)

	// On the ensemble.
	a := NewAdmin(dial(t, connect, ensembleSessionTimeout), "")
	startCoreProc(t, connect, "a", "--task", task, "--session-timeout", timeout)
	waitOwner(t, a, task, "a", StateRunning, 60*time.Second)
	startCoreProc(t, connect, "b", "--task", task, "--session-timeout", timeout)
	coordtest.WaitFor(t, 60*time.Second, "b to stand by", func() error {
		ts, err := a.Task(ctx, task)
		if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.State != StateStandby {
			return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
		}
		return nil
	})
	sampler := sampleOwnership(t, a, []string{a.layout.Instances(task)})

	runs := startEnsembleSchedulers(t, connect)
	locks := startLockHolders(t, connect, 3)

	// A steady write load for the whole test.
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() {
		const batch, steps = 50, 10
		var err error
		for first := 2000; loadCtx.Err() == nil && err == nil; first += batch * steps {
			err = load(loadCtx, source.DB(t), db, first, batch*steps, batch)
			select {
			case <-loadCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		if loadCtx.Err() != nil {
			err = nil // stopped on purpose; a statement it interrupted is not a failure
		}
		loaded <- err
	}()

	// Progress on every front before each kill and after the last one.
	progress := func(what string) {
		t.Helper()
		jobRuns, lockHolds := runs.count(t), locks.holds()
		coordtest.WaitFor(t, 90*time.Second, "progress "+what, func() error {
			if n := runs.count(t); n < jobRuns+2 {
				return fmt.Errorf("job runs %d, want %d", n, jobRuns+2)
			}
			if n := locks.holds(); n < lockHolds+2 {
				return fmt.Errorf("lock holds %d, want %d", n, lockHolds+2)
			}
			if _, _, _, err := targetCheckpoint(ctx, target.DB(t), task); err != nil {
				return fmt.Errorf("target checkpoint: %w", err)
			}
			return nil
		})
	}
	progress("before any kill")

	leader := ens.WaitLeader(t, 30*time.Second)
	t.Logf("killing the leader, member %d", leader+1)
	ens.Members[leader].Kill()
	next := ens.WaitLeader(t, 60*time.Second)
	t.Logf("member %d leads", next+1)
	progress("after the leader's kill")
	ens.Members[leader].Restart(t)

	follower := (next + 1) % len(ens.Members)
	if follower == leader { // any member but the new leader; prefer the restarted one's peer
		follower = (follower + 1) % len(ens.Members)
	}
	t.Logf("killing a follower, member %d", follower+1)
	ens.Members[follower].Kill()
	progress("after a follower's kill")

	stopLoad()
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, source, target, db, 2*time.Minute)
	locks.stop()
	sampler.check(t)
	runs.check(t)
	locks.check(t)
}

// ctl runs `shepherd ctl --zk connect args…` and returns its output,
// failing the test if it fails.
func ctl(t testing.TB, connect string, args ...string) string {
	t.Helper()
	cmd := exec.Command(shepherdBinary(t), append([]string{"ctl", "--zk", connect, "--auth-file", coordtest.AuthFile(t)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shepherd ctl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// jobRuns is what three schedulers' job left behind: one line per executed
// attempt, "<run-key> <attempt>", read back as "<run-key>/attempt-<n>" (run
// keys hold no spaces).
type jobRuns struct{ path string }

// startEnsembleSchedulers starts three schedulers sharing a jobs file whose
// job fires every second and appends its run key and attempt to a file.
func startEnsembleSchedulers(t testing.TB, connect string) *jobRuns {
	t.Helper()
	dir := t.TempDir()
	r := &jobRuns{path: filepath.Join(dir, "runs.txt")}
	jobs := fmt.Sprintf(`jobs:
  - name: tick
    schedule: "@every 1s"
    command: /bin/sh
    args: ["-c", "echo \"$SHEPHERD_RUN_KEY $SHEPHERD_ATTEMPT\" >> %s"]
    historyLimit: 5
`, r.path)
	file := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(file, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		host := "sched-" + strconv.Itoa(i)
		startShepherdProc(t, host, "scheduler", "--zk", connect, "--auth-file", coordtest.AuthFile(t), "--jobs", file, "--host", host,
			"--session-timeout", ensembleSessionTimeout.String(), "--log-dir", filepath.Join(dir, host))
	}
	return r
}

func (r *jobRuns) lines(t testing.TB) []string {
	data, err := os.ReadFile(r.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(data), " ", "/attempt-"))
}

// count is how many attempts have run so far.
func (r *jobRuns) count(t testing.TB) int { return len(r.lines(t)) }

// check fails the test if an attempt of a run was executed twice.
func (r *jobRuns) check(t testing.TB) {
	t.Helper()
	seen := map[string]int{}
	retried := 0
	for _, l := range r.lines(t) {
		seen[l]++
		if !strings.HasSuffix(l, "/attempt-1") {
			retried++
		}
	}
	for l, n := range seen {
		if n > 1 {
			t.Errorf("run %s executed %d times", l, n)
		}
	}
	t.Logf("job: %d attempts executed, %d of them retries after a master's session ended", len(r.lines(t)), retried)
}

// lockHolders run `shepherd ctl lock` in a loop, each hold a short command
// that writes when it started and ended to a file of its own.
type lockHolders struct {
	dir  string
	quit chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	exits  map[string]time.Time // hold file → when its ctl exited
	failed int                  // ctl runs that ended without holding
}

func startLockHolders(t testing.TB, connect string, n int) *lockHolders {
	t.Helper()
	bin := shepherdBinary(t)
	auth := coordtest.AuthFile(t)
	h := &lockHolders{dir: t.TempDir(), quit: make(chan struct{}), exits: map[string]time.Time{}}
	for i := range n {
		h.wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-h.quit:
					return
				default:
				}
				file := filepath.Join(h.dir, fmt.Sprintf("hold-%d-%d", i, k))
				cmd := exec.Command(bin, "--log-level", "warn", "ctl", "--zk", connect, "--auth-file", auth,
					"--session-timeout", ensembleSessionTimeout.String(), "--timeout", "20s",
					"lock", "/ensemble-lock", "--",
					"/bin/sh", "-c", `date +%s%N > "$1"; sleep 0.1; date +%s%N >> "$1"`, "sh", file)
				cmd.SysProcAttr = childAttrs()
				err := cmd.Run()
				h.mu.Lock()
				h.exits[file] = time.Now()
				if err != nil {
					h.failed++
				}
				h.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

// stop ends the loops; it may be called more than once.
func (h *lockHolders) stop() {
	h.mu.Lock()
	select {
	case <-h.quit:
	default:
		close(h.quit)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// holds is how many holds have started so far.
func (h *lockHolders) holds() int {
	entries, _ := os.ReadDir(h.dir)
	return len(entries)
}

// check fails the test if two holds overlapped. A hold whose command was
// killed with SIGKILL because its lock was lost has no end line; its end
// lies between its start and its ctl's exit, and only its start is
// checked (it is logged).
func (h *lockHolders) check(t testing.TB) {
	t.Helper()
	type hold struct {
		file       string
		start, end int64
	}
	var holds []hold
	lost := 0
	h.mu.Lock()
	defer h.mu.Unlock()
	for file, exited := range h.exits {
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue // never held
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue // killed before it wrote; its start is unknown but it did nothing
		}
		hd := hold{file: filepath.Base(file)}
		if hd.start, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		hd.end = hd.start
		if len(f) > 1 {
			if hd.end, err = strconv.ParseInt(f[1], 10, 64); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		} else {
			lost++
			t.Logf("%s: its lock was lost while it ran; its ctl exited %v after it started", hd.file,
				time.Duration(exited.UnixNano()-hd.start))
		}
		holds = append(holds, hd)
	}
	slices.SortFunc(holds, func(x, y hold) int { return cmp.Compare(x.start, y.start) })
	for i := 1; i < len(holds); i++ {
		if prev := holds[i-1]; holds[i].start < prev.end {
			t.Errorf("lock held twice: %s started %v before %s ended", holds[i].file,
				time.Duration(prev.end-holds[i].start), prev.file)
		}
	}
	t.Logf("lock: %d holds (%d lost), %d ctl runs failed", len(holds), lost, h.failed)
}
