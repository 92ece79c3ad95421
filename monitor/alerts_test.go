package monitor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
)

func noSilence(Finding) bool { return false }

func statuses(ns []Notification) string {
	var s []string
	for _, n := range ns {
		st := n.Status
		if n.Repeat {
			st += "(repeat)"
		}
		s = append(s, st+" "+n.Rule)
	}
	return strings.Join(s, ", ")
}

// TestStepFiresAfterHoldAndResolvesOnce walks one finding through its
// life: pending for its hold time, one firing notification, nothing
// while it stays, one resolved notification when it goes.
func TestStepFiresAfterHoldAndResolvesOnce(t *testing.T) {
	f := Finding{Rule: RuleTaskNotRunning, Severity: Critical, Labels: map[string]string{"task": "t"}, Summary: "s"}
	hold := map[string]time.Duration{RuleTaskNotRunning: 30 * time.Second}
	var alerts map[string]*Alert
	steps := []struct {
		at      time.Duration
		present bool
		want    string
	}{
		{0, true, ""},
		{20 * time.Second, true, ""},
		{30 * time.Second, true, "firing TaskNotRunning"},
		{40 * time.Second, true, ""},
		{50 * time.Second, false, "resolved TaskNotRunning"},
		{60 * time.Second, false, ""},
		// A condition shorter than the hold never fires.
		{70 * time.Second, true, ""},
		{80 * time.Second, false, ""},
	}
	var fired Notification
	for _, s := range steps {
		var fs []Finding
		if s.present {
			fs = []Finding{f}
		}
		var notes []Notification
		alerts, notes = Step(alerts, fs, hold, 0, noSilence, t0.Add(s.at))
		if got := statuses(notes); got != s.want {
			t.Fatalf("at %v: sent %q, want %q", s.at, got, s.want)
		}
		for _, n := range notes {
			switch n.Status {
			case StatusFiring:
				fired = n
			case StatusResolved:
				if !n.StartsAt.Equal(fired.StartsAt) || !n.EndsAt.Equal(t0.Add(s.at)) || n.ID == fired.ID {
					t.Fatalf("resolved %+v does not follow fired %+v", n, fired)
				}
			}
		}
	}
}

func TestStepRepeatsAndIDsAreStable(t *testing.T) {
	f := Finding{Rule: RuleTaskFailed, Severity: Critical, Labels: map[string]string{"task": "t"}}
	alerts, notes := Step(nil, []Finding{f}, nil, time.Hour, noSilence, t0)
	if statuses(notes) != "firing TaskFailed" {
		t.Fatalf("immediate rule: %s", statuses(notes))
	}
	first := notes[0].ID
	alerts, notes = Step(alerts, []Finding{f}, nil, time.Hour, noSilence, t0.Add(59*time.Minute))
	if len(notes) != 0 {
		t.Fatalf("before the repeat interval: %s", statuses(notes))
	}
	alerts, notes = Step(alerts, []Finding{f}, nil, time.Hour, noSilence, t0.Add(60*time.Minute))
	if statuses(notes) != "firing(repeat) TaskFailed" || notes[0].ID == first {
		t.Fatalf("at the repeat interval: %s %+v", statuses(notes), notes)
	}
	// The same step computed again (a monitor taking over, re-running a
	// step whose notifications it cannot know were sent) gives the same
	// IDs, so receivers can drop the second delivery.
	_, again := Step(alerts, nil, nil, time.Hour, noSilence, t0.Add(61*time.Minute))
	_, again2 := Step(alerts, nil, nil, time.Hour, noSilence, t0.Add(61*time.Minute))
	if len(again) != 1 || again[0].ID != again2[0].ID {
		t.Fatalf("resolution IDs differ between identical steps: %+v %+v", again, again2)
	}
}

func TestStepSilencedAlertSendsNothing(t *testing.T) {
	f := Finding{Rule: RuleCollectorDead, Severity: Critical, Labels: map[string]string{"collector": "c"}}
	silenced := func(Finding) bool { return true }
	alerts, notes := Step(nil, []Finding{f}, nil, time.Minute, silenced, t0)
	if len(notes) != 0 || alerts[f.Key()].State != StateFiring || !alerts[f.Key()].Silenced {
		t.Fatalf("silenced: sent %s, alert %+v", statuses(notes), alerts[f.Key()])
	}
	alerts, notes = Step(alerts, []Finding{f}, nil, time.Minute, noSilence, t0.Add(2*time.Minute))
	if len(notes) != 0 {
		t.Fatalf("fired silenced, still firing after the silence: %s", statuses(notes))
	}
	_, notes = Step(alerts, nil, nil, time.Minute, noSilence, t0.Add(3*time.Minute))
	if len(notes) != 0 {
		t.Fatalf("fired silenced, resolved: %s", statuses(notes))
	}
}

func TestStepSeverityChangeIsAnotherAlert(t *testing.T) {
	w := Finding{Rule: RuleReplicationLag, Severity: Warning, Labels: map[string]string{"task": "t"}}
	c := w
	c.Severity = Critical
	alerts, notes := Step(nil, []Finding{w}, nil, 0, noSilence, t0)
	_, notes2 := Step(alerts, []Finding{c}, nil, 0, noSilence, t0.Add(time.Minute))
	got := fmt.Sprint(statuses(notes), " / ", statuses(notes2))
	if got != "firing ReplicationLag / firing ReplicationLag, resolved ReplicationLag" || notes2[0].Severity != Critical || notes2[1].Severity != Warning {
		t.Fatalf("warning then critical: %s %+v", got, notes2)
	}
}

// TestStateStaysUnderTheNodeLimit: thousands of busy tasks' samples are
// cut so that the state fits a ZooKeeper node.
func TestStateStaysUnderTheNodeLimit(t *testing.T) {
	st := &State{Alerts: map[string]*Alert{}, History: History{Tasks: map[string]*TaskHistory{}}}
	for i := range 2000 {
		th := &TaskHistory{}
		for j := range maxSamples {
			th.Samples = append(th.Samples, PosSample{At: t0.Add(time.Duration(j) * time.Second), Pos: pos("mysql-bin.000001", uint32(j))})
		}
		st.History.Tasks[fmt.Sprintf("task-%04d", i)] = th
	}
	data, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxStateBytes {
		t.Fatalf("%d bytes, over %d", len(data), maxStateBytes)
	}
	if n := len(st.History.Tasks["task-0000"].Samples); n == 0 || n == maxSamples {
		t.Fatalf("%d samples kept: want some, fewer than %d", n, maxSamples)
	}
}

// TestAReadThatFailsResolvesNothing: an alert whose section or source
// could not be read carries on; one that was read and is gone resolves.
func TestAReadThatFailsResolvesNothing(t *testing.T) {
	job := Finding{Rule: RuleJobFailed, Severity: Critical, Labels: map[string]string{"job": "j"}}
	purged := Finding{Rule: RuleBinlogPurged, Severity: Critical, Labels: map[string]string{"task": "t"}}
	dead := Finding{Rule: RuleCollectorDead, Severity: Critical, Labels: map[string]string{"collector": "c"}}
	alerts, _ := Step(nil, []Finding{job, purged, dead}, nil, 0, noSilence, t0)
	in := &Input{Now: t0.Add(time.Minute), Snap: &cluster.Snapshot{
		Tasks:  []core.TaskStatus{task("t")},
		Errors: map[cluster.Section]string{cluster.SectionJobs: "connection loss"},
	}, Sources: map[string]SourceReading{"t": {Err: "connection refused"}}}
	_, notes := Step(alerts, Unjudged(in, alerts), nil, 0, noSilence, in.Now)
	if got := statuses(notes); got != "resolved CollectorDead" {
		t.Fatalf("jobs unread, source unread, collectors read and fine: sent %q", got)
	}
}
