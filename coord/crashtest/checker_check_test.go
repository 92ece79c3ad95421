package crashtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestCheckerCatchesTampering changes the tree behind the model's back, as
// a server that lost, changed or invented writes would, and checks that the
// crash test's checker reports each change, naming the znode.
func TestCheckerCatchesTampering(t *testing.T) {
	srv := startShepherd(t, serverOptions{})
	f := newFleet(t, srv, 3, 8, testSeed(t))
	f.closeSession("before the crash")
	f.loadUntilKilled(1, func(e time.Duration) bool { return e >= 200*time.Millisecond }, 5*time.Second)
	srv.Restart(t)
	f.verifyRecovered("before tampering")
	if t.Failed() {
		return
	}

	present := func(w *worker) string {
		for _, s := range w.slots {
			if s.present {
				return s.path
			}
		}
		t.Fatalf("worker %d has no znode to tamper with", w.id)
		return ""
	}
	overwritten, deleted := present(f.workers[0]), present(f.workers[1])
	tamperer := f.reader("the tampering session")
	phantom := f.workers[2].dir.path + "/phantom"
	if _, err := tamperer.Set(overwritten, []byte("not acknowledged"), -1); err != nil {
		t.Fatal(err)
	}
	if err := tamperer.Delete(deleted, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := tamperer.Create(phantom, []byte("ghost"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	resurrected := f.gone[0]
	if _, err := tamperer.Create(resurrected, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	var report strings.Builder
	for _, err := range f.check() {
		fmt.Fprintf(&report, "\n\t%v", err)
	}
	for _, want := range []string{overwritten + ":", deleted + ":", "phantom", resurrected + ":"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the checker did not report the tampering of %s; it reported:%s", strings.TrimSuffix(want, ":"), report.String())
		}
	}
}
