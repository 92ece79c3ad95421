package recipe

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// kazooCandidate starts one kazoo Election candidate process (see
// testdata/election_kazoo.py) with the fault tests' session timeout.
func kazooCandidate(t *testing.T, hosts string) *linePeer {
	t.Helper()
	python, ok := testpeer.KazooPython()
	testpeer.Require(t, "kazoo", ok, python+" cannot import kazoo")
	secs := strings.TrimSuffix(faultTimeout.String(), "s")
	return startPeer(t, "kazoo candidate", exec.Command(python, filepath.Join("testdata", "election_kazoo.py"), hosts, secs))
}

// TestElectionKazooInterop puts a Go Election and kazoo's Election on one
// path: exactly one leads, each sees the other's identity as leader's,
// leadership passes both ways on resignation, and when the leader dies —
// a kazoo process killed with SIGKILL, a Go session expired — the other
// takes over within the session timeout.
func TestElectionKazooInterop(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{SessionTimeout: faultTimeout})
		g := NewElection(s, p, "go-candidate")
		if err := g.Campaign(ctx); err != nil {
			t.Fatal(err)
		}

		py := kazooCandidate(t, tg.Addr)
		py.send("elect %s py-candidate", p)
		waitChildren(t, s, p, 2)
		py.quiet("the Go candidate leads")
		py.send("contenders %s", p)
		if got := py.expect("contenders ", 10*time.Second); got != "contenders go-candidate,py-candidate" {
			t.Errorf("kazoo sees %q, want the Go candidate first", got)
		}

		// Go resigns: kazoo leads, and Go reads its identity.
		if err := g.Resign(); err != nil {
			t.Fatal(err)
		}
		py.expect("elected", 10*time.Second)
		if id, err := g.Leader(ctx); err != nil || id != "py-candidate" {
			t.Errorf("Go reads leader %q, %v; want py-candidate", id, err)
		}
		if g.IsLeader() {
			t.Error("Go says it leads while kazoo does")
		}

		// kazoo is killed while leading: Go takes over.
		done := campaignAsync(ctx, g)
		waitChildren(t, s, p, 2)
		waitParked(t, []*Session{s}, 1)
		notYet(t, done, "Go Campaign while kazoo leads")
		killed := time.Now()
		if err := py.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, done, "Go Campaign after kazoo was killed"); err != nil {
			t.Fatal(err)
		}
		took := time.Since(killed)
		t.Logf("Go took over %v after kazoo's SIGKILL (session timeout %v)", took.Round(time.Millisecond), faultTimeout)

		// A new kazoo candidate queues behind Go; Go's session expires:
		// kazoo takes over, then resigns cleanly.
		py2 := kazooCandidate(t, tg.Addr)
		py2.send("elect %s py-2", p)
		waitChildren(t, s, p, 2)
		py2.quiet("the Go candidate leads")
		expireSession(t, s, tg.Addr)
		py2.expect("elected", 10*time.Second)
		if g.IsLeader() {
			t.Error("Go says it leads after its session expired")
		}
		py2.send("resign")
		py2.expect("resigned", 10*time.Second)
		waitChildren(t, s, p, 0)
	})
}
