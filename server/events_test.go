package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
)

// eventData decodes an event's name and data.
func eventData(t *testing.T, ev []byte) (string, map[string]json.RawMessage) {
	t.Helper()
	name, rest, ok := strings.Cut(string(ev), "\ndata: ")
	if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasSuffix(rest, "\n\n") {
		t.Fatalf("not one server-sent event: %q", ev)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSuffix(rest, "\n\n")), &d); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(name, "event: "), d
}

func tasksSnap(states map[string]string) *Snapshot {
	snap := &Snapshot{ReadAt: time.Now().UTC()}
	for _, n := range []string{"a", "b", "c", "d"} {
		if st, ok := states[n]; ok {
			snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: n, Spec: &core.Spec{Name: n, State: st}})
		}
	}
	return snap
}

// TestEventsCarryWhatChanged: a stream that sent the snapshot before
// gets only what changed since — the tasks added or changed, the names
// of those deleted — and one that sent nothing yet, or skipped a
// snapshot, gets the whole summary; a snapshot with a section it could
// not read goes whole, and so does the one after it.
func TestEventsCarryWhatChanged(t *testing.T) {
	var c eventCache
	board := &alertBoard{}
	s1 := tasksSnap(map[string]string{"a": "running", "b": "running", "c": "stopped"})
	if name, _ := eventData(t, c.encode(s1, board, nil)); name != "snapshot" {
		t.Fatalf("first event %q, want snapshot", name)
	}
	s2 := tasksSnap(map[string]string{"b": "stopped", "c": "stopped", "d": "running"})
	name, d := eventData(t, c.encode(s2, board, s1))
	if name != "delta" {
		t.Fatalf("event after s1: %q, want delta", name)
	}
	var tasks struct {
		Set []liveTask `json:"set"`
		Del []string   `json:"del"`
	}
	if err := json.Unmarshal(d["tasks"], &tasks); err != nil {
		t.Fatal(err)
	}
	var set []string
	for _, lt := range tasks.Set {
		set = append(set, lt.Name+"="+lt.Desired)
	}
	if fmt.Sprint(set) != "[b=stopped d=running]" || fmt.Sprint(tasks.Del) != "[a]" {
		t.Errorf("delta tasks set %v del %v, want b and d set, a deleted (c unchanged)", set, tasks.Del)
	}
	if name, _ := eventData(t, c.encode(s2, board, nil)); name != "snapshot" {
		t.Errorf("s2 to a new stream: %q, want snapshot", name)
	}
	s3 := tasksSnap(map[string]string{"b": "running"})
	if name, _ := eventData(t, c.encode(s3, board, s1)); name != "snapshot" {
		t.Errorf("s3 to a stream that skipped s2: %q, want snapshot", name)
	}
	s4 := tasksSnap(nil)
	s4.Errors = map[cluster.Section]string{cluster.SectionTasks: "connection loss"}
	if name, _ := eventData(t, c.encode(s4, board, s3)); name != "snapshot" {
		t.Errorf("a snapshot with an unread section: %q, want snapshot", name)
	}
	s5 := tasksSnap(map[string]string{"b": "running"})
	if name, _ := eventData(t, c.encode(s5, board, s4)); name != "snapshot" {
		t.Errorf("the snapshot after an unread section: %q, want snapshot", name)
	}
	s6 := tasksSnap(map[string]string{"b": "running"})
	if name, d := eventData(t, c.encode(s6, board, s5)); name != "delta" || string(d["tasks"]) != "{}" {
		t.Errorf("an unchanged snapshot: %q %s, want an empty delta", name, d["tasks"])
	}
}

// TestEventOfOneChangeIsSmall: among 1,000 tasks, one task's change
// makes an event of about that task, not of the estate.
func TestEventOfOneChangeIsSmall(t *testing.T) {
	mk := func(changed string) *Snapshot {
		snap := &Snapshot{ReadAt: time.Now().UTC()}
		for i := range 1000 {
			n := fmt.Sprintf("task-%04d", i)
			st := core.DesiredRunning
			if n == changed {
				st = core.DesiredStopped
			}
			snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: n, Spec: &core.Spec{Name: n, State: st}})
		}
		return snap
	}
	var c eventCache
	board := &alertBoard{}
	s1, s2 := mk(""), mk("task-0500")
	full := c.encode(s1, board, nil)
	delta := c.encode(s2, board, s1)
	if len(delta) > 1024 || len(full) < 100*len(delta) {
		t.Errorf("event of one change among 1,000 tasks: %d bytes (the whole: %d)", len(delta), len(full))
	}
}
