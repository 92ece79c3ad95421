package crashtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// fleetRoot is the znode under which the crash load writes, closedRoot
// holds the ephemerals of sessions closed on purpose, and ballastRoot the
// znodes that only make snapshots bigger.
const (
	fleetRoot   = "/crashtest"
	closedRoot  = "/crashtest-closed"
	ballastRoot = "/crashtest-ballast"
)

const (
	// closedEphemerals is how many ephemerals closeSession creates.
	closedEphemerals = 3
	// maxReported caps the differences one check reports: a server that
	// lost a second of writes differs in every znode.
	maxReported = 12
	// ballastBatch is how many ballast znodes one multi creates;
	// ballastSample is how many of them a check reads back.
	ballastBatch  = 100
	ballastSample = 32
)

// target is a server the load can crash and restart where it was: a
// shepherd, or in differential runs an Apache ZooKeeper.
type target interface {
	Addr() string
	// Kill crashes the server with SIGKILL and waits until it is gone.
	Kill()
	// Stop stops the server gracefully and waits until it is gone.
	Stop() error
	// Restart (stopping gracefully first if it runs) starts the server again
	// on the same port and data and waits until it serves.
	Restart(t testing.TB)
}

// fleet is the crash test's clients: workers that each own a set of znodes
// and write them under load, and the ledger of applied zxids. What the
// server holds is read back by a new session each time: an old one would be
// turned away by a server that lost transactions it had seen, which would
// hide what exactly was lost.
type fleet struct {
	t       *testing.T
	srv     target
	workers []*worker
	ledger  *ledger
	// sessions holds every session id the server issued to the fleet, to
	// check that none is issued twice, across restarts too.
	sessions map[int64]string
	// gone lists ephemeral znodes whose session was closed and which were
	// seen deleted: that deletion must survive crashes.
	gone []string
	// ballast is how many never-changing znodes of ballastBytes each sit
	// under ballastRoot; rng picks the ones a check reads back.
	ballast, ballastBytes int
	rng                   *rand.Rand
}

// newFleet connects nWorkers workers of nSlots znodes each to srv and
// creates their directories.
func newFleet(t *testing.T, srv target, nWorkers, nSlots int, seed uint64) *fleet {
	t.Helper()
	f := &fleet{t: t, srv: srv, ledger: newLedger(), sessions: map[int64]string{}, rng: rand.New(rand.NewPCG(seed, 1<<32))}
	setup := f.reader("the setup session")
	for _, p := range []string{fleetRoot, closedRoot} {
		if _, err := setup.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	setup.Close()
	for i := range nWorkers {
		w := &worker{
			id:  i,
			c:   connect(t, srv.Addr()),
			rng: rand.New(rand.NewPCG(seed, uint64(i))),
			dir: parentDir{path: fmt.Sprintf("%s/w%d", fleetRoot, i)},
		}
		f.newSession(w.c, fmt.Sprintf("worker %d", i))
		if _, err := w.c.Create(w.dir.path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", w.dir.path, err)
		}
		// The directory's own create is not a child change of itself.
		w.dir.pzxid, w.dir.pzxidKnown = w.c.tap.lastZxid(), true
		for j := range nSlots {
			w.slots = append(w.slots, &slot{path: fmt.Sprintf("%s/n%d", w.dir.path, j)})
		}
		f.workers = append(f.workers, w)
	}
	return f
}

// newSession registers c's session, failing the test if its id was issued
// before.
func (f *fleet) newSession(c *client, who string) {
	f.t.Helper()
	if prev, ok := f.sessions[c.session]; ok {
		f.t.Errorf("session id %#x issued to %s was already issued to %s", c.session, who, prev)
	}
	f.sessions[c.session] = who
}

// addBallast creates n znodes of size bytes that are never written again.
// They make snapshots big enough to take tens of milliseconds to write, so
// that crashes land in the middle of one now and then.
func (f *fleet) addBallast(n, size int) {
	f.t.Helper()
	c := f.reader("the ballast session")
	defer c.Close()
	if _, err := c.Create(ballastRoot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		f.t.Fatalf("create %s: %v", ballastRoot, err)
	}
	for i := 0; i < n; i += ballastBatch {
		var ops []any
		for j := i; j < min(i+ballastBatch, n); j++ {
			ops = append(ops, &zk.CreateRequest{Path: ballastPath(j), Data: ballastData(j, size), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := c.Multi(ops...); err != nil {
			f.t.Fatalf("create ballast %d..%d: %v", i, i+len(ops)-1, err)
		}
	}
	f.ballast, f.ballastBytes = n, size
}

func ballastPath(i int) string { return fmt.Sprintf("%s/b%05d", ballastRoot, i) }

// ballastData is ballast znode i's data: its number, repeated.
func ballastData(i, size int) []byte {
	label := fmt.Sprintf("ballast %05d;", i)
	return []byte(strings.Repeat(label, size/len(label)+1)[:size])
}

// checkBallast reads back how many ballast znodes there are and a sample of
// them.
func (f *fleet) checkBallast(c *client) []error {
	if f.ballast == 0 {
		return nil
	}
	_, st, err := c.Exists(ballastRoot)
	if err != nil {
		return []error{fmt.Errorf("exists %s: %w", ballastRoot, err)}
	}
	if int(st.NumChildren) != f.ballast {
		return []error{fmt.Errorf("%s has %d children, want the %d ballast znodes created at the start", ballastRoot, st.NumChildren, f.ballast)}
	}
	var errs []error
	for range ballastSample {
		i := f.rng.IntN(f.ballast)
		data, st, err := c.Get(ballastPath(i))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read ballast %s: %w", ballastPath(i), err))
		case !bytes.Equal(data, ballastData(i, f.ballastBytes)) || st.Version != 0:
			errs = append(errs, fmt.Errorf("ballast %s, written once at the start, has data %s version %d", ballastPath(i), showData(data), st.Version))
		}
	}
	return errs
}

// reader opens a new session, registered as who.
func (f *fleet) reader(who string) *client {
	f.t.Helper()
	c := connect(f.t, f.srv.Addr())
	f.newSession(c, who)
	return c
}

// closeSession opens a session, gives it ephemerals, closes it and waits
// until the checker sees them deleted. A deletion a client has seen must
// survive any later crash, like any acknowledged write; verify checks it.
func (f *fleet) closeSession(label string) {
	f.t.Helper()
	c := connect(f.t, f.srv.Addr())
	f.newSession(c, "the session closed "+label)
	var paths []string
	for i := range closedEphemerals {
		p := fmt.Sprintf("%s/%s-%d", closedRoot, strings.ReplaceAll(label, " ", "-"), i)
		if _, err := c.Create(p, []byte(label), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			f.t.Fatalf("create ephemeral %s: %v", p, err)
		}
		paths = append(paths, p)
	}
	c.Close()
	r := f.reader("the session watching the closed one's ephemerals")
	defer r.Close()
	deadline := time.Now().Add(reconnectTimeout)
	for _, p := range paths {
		for {
			ok, _, err := r.Exists(p)
			if err != nil {
				f.t.Fatalf("exists %s: %v", p, err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("ephemeral %s of closed session %#x still exists %v after the close", p, c.session, reconnectTimeout)
			}
			time.Sleep(pollInterval)
		}
	}
	f.gone = append(f.gone, paths...)
}

// clients returns the workers' clients.
func (f *fleet) clients() []*client {
	var cs []*client
	for _, w := range f.workers {
		cs = append(cs, w.c)
	}
	return cs
}

// loadStats summarises one load cycle.
type loadStats struct {
	acked, unknown int
	elapsed        time.Duration // from the start of the load to the halt
}

// loadUntilKilled runs the load and crashes the server with SIGKILL once
// killWhen returns true or maxLoad passes; see loadUntil.
func (f *fleet) loadUntilKilled(cycle int, killWhen func(elapsed time.Duration) bool, maxLoad time.Duration) loadStats {
	f.t.Helper()
	return f.loadUntil(cycle, killWhen, maxLoad, f.srv.Kill)
}

// loadUntil runs every worker until halt stops the server, which happens
// once when returns true (it is polled while the load runs) or maxLoad
// passes. It returns when every worker has stopped. A worker stops at its
// first write with an unknown outcome, which the next check decides.
func (f *fleet) loadUntil(cycle int, when func(elapsed time.Duration) bool, maxLoad time.Duration, halt func()) loadStats {
	f.t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range f.workers {
		w.acked, w.unknown = 0, 0
		wg.Go(func() { w.run(cycle, f.ledger, stop) })
	}
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	started := time.Now()
	for !when(time.Since(started)) && time.Since(started) < maxLoad {
		select {
		case <-allDone: // a failure stopped everyone early
		case <-time.After(pollInterval):
			continue
		}
		break
	}
	elapsed := time.Since(started)
	halt()
	close(stop)
	<-allDone
	st := loadStats{elapsed: elapsed}
	for _, w := range f.workers {
		if w.failure != nil {
			f.t.Errorf("worker %d: %v", w.id, w.failure)
		}
		st.acked += w.acked
		st.unknown += w.unknown
	}
	return st
}

// verifyRecovered checks a restarted server: it reads every slot and
// directory back and fails the test on every difference from the model,
// then waits for the workers' sessions, which must have survived. when
// names the moment for failure messages. Pending writes are decided, and
// everything applied so far becomes the floor for the zxids of later
// writes.
func (f *fleet) verifyRecovered(when string) {
	f.t.Helper()
	errs := f.check()
	for i, err := range errs {
		if i == maxReported {
			f.t.Errorf("%s: and %d more differences", when, len(errs)-i)
			break
		}
		f.t.Errorf("%s: %v", when, err)
	}
	f.ledger.seal()
	if err := waitSessions(f.clients()); err != nil {
		f.t.Fatalf("%s: %v", when, err)
	}
}

// check compares the server with the model and returns every difference.
func (f *fleet) check() []error {
	c := f.reader("a checker")
	defer c.Close()
	var errs []error
	for _, w := range f.workers {
		errs = append(errs, w.verify(c, f.ledger)...)
	}
	errs = append(errs, f.checkBallast(c)...)
	for _, p := range f.gone {
		ok, st, err := c.Exists(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("exists %s: %w", p, err))
		case ok:
			errs = append(errs, fmt.Errorf("%s: an ephemeral seen deleted when its session %#x was closed exists again", p, st.EphemeralOwner))
		}
	}
	return errs
}
