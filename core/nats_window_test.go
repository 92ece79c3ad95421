package core

import (
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/duration"
)

// natsSpec is testSpec with a NATS target whose duplicate window is
// window.
func natsSpec(name string, window time.Duration) *Spec {
	sp := testSpec(name)
	sp.Target = TargetEndpoint{Kind: TargetNATS, URL: "nats://nats.test:4222", Stream: "CDC", DuplicateWindow: duration.Duration(window)}
	return sp
}

// TestNATSWindowMustOutlastTakeover: a core refuses (FAILED, naming the
// field) a NATS task whose duplicate window a takeover could outlast, and
// runs one whose window covers it.
func TestNATSWindowMustOutlastTakeover(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, natsSpec("short", 20*time.Second))
		mustAdd(t, a, natsSpec("long", 10*time.Minute))
		eng := memFleet{"short": NewMemEngine(50), "long": NewMemEngine(50)}
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"short", "long"} })
		failed := waitOwner(t, a, "short", "h1", StateFailed, 10*time.Second)
		if !strings.Contains(failed.State.Error, "target.duplicateWindow") {
			t.Errorf("the short window's error %q does not name target.duplicateWindow", failed.State.Error)
		}
		waitOwner(t, a, "long", "h1", StateRunning, 10*time.Second)
		if _, _, opens, _ := eng["short"].stats(); opens != 0 {
			t.Errorf("the task with too short a window was opened %d times", opens)
		}
	})
}
