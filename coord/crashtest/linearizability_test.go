package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// linRoot is the znode whose children are the registers.
const linRoot = "/lin"

// TestLinearizability runs concurrent gets, plain sets and version-
// conditioned sets on a few znodes while the server is crashed with
// SIGKILL and stopped gracefully, and checks the recorded history with
// porcupine against versioned registers. An operation whose connection was
// lost may have taken effect or not; every other one must fit a single
// order consistent with real time. On failure the history's visualisation
// is written to the test's artifact directory (kept with go test
// -artifacts).
func TestLinearizability(t *testing.T) {
	srv := startShepherd(t, serverOptions{snapCount: 300})
	linearizableAcrossRestarts(t, srv, testSeed(t), 4)
}

// Shape of the linearizability run.
const (
	linClients = 5
	linKeys    = 3
	linMinUp   = 300 * time.Millisecond
	linMaxUp   = 900 * time.Millisecond
	// linMaxOps bounds one client's operations over the whole run.
	linMaxOps = 20000
	// checkTimeout bounds porcupine; a history this size takes well under
	// a second, so hitting it means the history is pathological.
	checkTimeout = 60 * time.Second
)

// linearizableAcrossRestarts is the body of TestLinearizability, for any
// target: restarts alternate between SIGKILL and a graceful stop.
func linearizableAcrossRestarts(t *testing.T, srv target, seed uint64, restarts int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	setup := connect(t, srv.Addr())
	keys := make([]string, linKeys)
	if _, err := setup.Create(linRoot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", linRoot, err)
	}
	for i := range keys {
		keys[i] = fmt.Sprintf("%s/k%d", linRoot, i)
		if _, err := setup.Create(keys[i], []byte("init"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", keys[i], err)
		}
	}
	setup.Close()

	rec := newRecorder()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopClients := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopClients() // also when a restart fails the test
	clients := make([]*client, linClients)
	for i := range clients {
		clients[i] = connect(t, srv.Addr())
		lc := &linClient{id: i, c: clients[i], rec: rec, keys: keys,
			rng: rand.New(rand.NewPCG(seed, uint64(100+i)))}
		wg.Go(func() { lc.run(stop) })
	}

	// Each phase is the load between two restarts; every one must complete
	// operations, or the history says nothing about that restart. A phase
	// starts once the clients are back. If they cannot come back, the
	// history so far and the final reads still go to porcupine, which shows
	// what was lost.
	phaseEnds := make([]int64, 0, restarts+1)
	up := func() time.Duration { return linMinUp + time.Duration(rng.Int64N(int64(linMaxUp-linMinUp)+1)) }
	done := 0
	for r := 1; r <= restarts && !t.Failed(); r++ {
		time.Sleep(up()) // load duration, not synchronisation
		phaseEnds = append(phaseEnds, rec.now())
		if r%2 == 1 {
			srv.Kill()
		}
		srv.Restart(t)
		done++
		if err := waitSessions(clients); err != nil {
			t.Errorf("after restart %d: %v", r, err)
		}
	}
	if !t.Failed() {
		time.Sleep(up())
		phaseEnds = append(phaseEnds, rec.now())
	}
	stopClients()

	// Final reads, by a new session, pin down every write whose outcome
	// was unknown.
	final, pid := connect(t, srv.Addr()), rec.newClient()
	for _, k := range keys {
		in := regInput{kind: regGet, key: k}
		call := rec.now()
		out, err := linDo(final, in)
		if err != nil {
			t.Fatalf("final read of %s: %v", k, err)
		}
		rec.add(pid, in, call, out, rec.now())
	}

	history := rec.history()
	st := summarize(history, phaseEnds)
	t.Logf("%d operations (%d gets, %d writes applied, %d cas refused, %d unknown) over %d restarts; completed per phase: %v",
		len(history), st.gets, st.applied, st.refused, st.unknown, done, st.perPhase)
	for i, n := range st.perPhase {
		if n == 0 && !t.Failed() {
			t.Errorf("phase %d (between restarts) completed no operation; the history does not test that restart", i+1)
		}
	}
	checkHistory(t, history)
}

// checkHistory fails t if history is not linearizable, writing porcupine's
// visualisation next to the test's other artifacts.
func checkHistory(t *testing.T, history []porcupine.Operation) {
	t.Helper()
	model := registerModel("init")
	started := time.Now()
	res := porcupine.CheckOperationsTimeout(model, history, checkTimeout)
	t.Logf("porcupine: %s in %v", res, time.Since(started).Round(time.Millisecond))
	if res == porcupine.Ok {
		return
	}
	res, info := porcupine.CheckOperationsVerbose(model, history, checkTimeout)
	path := filepath.Join(t.ArtifactDir(), "linearizability.html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("write the visualisation: %v", err)
	}
	if res == porcupine.Unknown {
		t.Errorf("porcupine could not decide within %v whether the history is linearizable; visualisation: %s", checkTimeout, path)
		return
	}
	t.Errorf("the history of %d operations is not linearizable; open %s (kept with go test -artifacts) to see the first key whose history no order explains", len(history), path)
}

// linClient issues random operations on the keys, one at a time.
type linClient struct {
	id   int
	c    *client
	rec  *recorder
	keys []string
	rng  *rand.Rand
}

func (lc *linClient) run(stop <-chan struct{}) {
	pid := lc.rec.newClient()
	versions := map[string]int32{} // the latest version this client saw per key
	for n := range linMaxOps {
		select {
		case <-stop:
			return
		default:
		}
		in := regInput{key: lc.keys[lc.rng.IntN(len(lc.keys))]}
		switch p := lc.rng.Float64(); {
		case p < 0.4:
			in.kind = regGet
		case p < 0.8:
			in.kind, in.version = regCAS, versions[in.key]
		default:
			in.kind = regSet
		}
		if in.kind != regGet {
			in.value = fmt.Sprintf("c%d-%d", lc.id, n)
		}
		call := lc.rec.now()
		out, err := linDo(lc.c, in)
		ret := lc.rec.now()
		if err == nil {
			lc.rec.add(pid, in, call, out, ret)
			if out.err == "" && !out.badVersion {
				versions[in.key] = out.version
			}
			continue
		}
		// A get with an unknown outcome observed nothing and is dropped;
		// a write's stays in the history, open-ended.
		if in.kind != regGet {
			lc.rec.add(pid, in, call, regOutput{unknown: true}, 0)
		}
		pid = lc.rec.newClient()
		if err := lc.c.waitSession(reconnectTimeout); err != nil {
			return // the restart loop reports clients that do not come back
		}
	}
}

// linDo performs one register operation. The error is non-nil only when
// the outcome is unknown; server answers are part of the output.
func linDo(c *client, in regInput) (regOutput, error) {
	if in.kind == regGet {
		data, st, err := c.Get(in.key)
		switch {
		case err == nil:
			return regOutput{value: string(data), version: st.Version}, nil
		case answered(err):
			return regOutput{err: err.Error()}, nil
		}
		return regOutput{}, err
	}
	version := int32(-1)
	if in.kind == regCAS {
		version = in.version
	}
	st, err := c.Set(in.key, []byte(in.value), version)
	switch {
	case err == nil:
		return regOutput{version: st.Version}, nil
	case in.kind == regCAS && errors.Is(err, zk.ErrBadVersion):
		return regOutput{badVersion: true}, nil
	case answered(err):
		return regOutput{err: err.Error()}, nil
	}
	return regOutput{}, err
}

// historyStats counts a history's operations by outcome and by phase.
type historyStats struct {
	gets, applied, refused, unknown int
	perPhase                        []int // completed operations that returned in each phase
}

func summarize(history []porcupine.Operation, phaseEnds []int64) historyStats {
	st := historyStats{perPhase: make([]int, len(phaseEnds))}
	for _, op := range history {
		in, out := op.Input.(regInput), op.Output.(regOutput)
		switch {
		case out.unknown:
			st.unknown++
			continue
		case in.kind == regGet:
			st.gets++
		case out.badVersion:
			st.refused++
		default:
			st.applied++
		}
		for i, end := range phaseEnds {
			if op.Return <= end {
				st.perPhase[i]++
				break
			}
		}
	}
	return st
}
