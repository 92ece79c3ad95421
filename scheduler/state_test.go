package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// TestDecideStateRefusesWhatItMustNotRun: the decision of readState,
// without a server: file jobs run; a stored job runs unless it does not
// decode, names another job, is overridden by a file job or is
// untrusted; an untrusted trigger is refused, a trusted one kept.
func TestDecideStateRefusesWhatItMustNotRun(t *testing.T) {
	job := func(name string) []byte {
		return Job{Name: name, Schedule: "@daily", Command: "/bin/true"}.Encode()
	}
	untrusted := fmt.Errorf("%w: world:anyone may write it", recipe.ErrUntrusted)
	raw := storedState{
		jobs: map[string]storedNode{
			"good":      {data: job("good")},
			"alias":     {data: job("real")},
			"garbled":   {data: []byte("{not json")},
			"fromfile":  {data: job("fromfile")},
			"planted":   {data: job("planted"), trust: untrusted},
			"unchecked": {data: []byte("{"), trust: untrusted}, // both: the decode error is said first
		},
		paused: []string{"good"},
		triggers: map[string]storedNode{
			"good@manual-1": {data: []byte("2026-11-25T00:00:00Z")},
			"good@manual-2": {data: []byte("2026-11-25T00:00:01Z"), trust: untrusted},
		},
	}
	st, refused := decideState([]Job{{Name: "fromfile", Schedule: "@hourly", Command: "/bin/true"}}, raw)

	var running []string
	for name, p := range st.jobs {
		running = append(running, name+"="+p.Schedule)
	}
	if len(st.jobs) != 2 || st.jobs["good"] == nil || st.jobs["fromfile"].Schedule != "@hourly" {
		t.Errorf("jobs %v, want good (stored) and fromfile (the file's)", running)
	}
	if !st.paused["good"] || len(st.paused) != 1 {
		t.Errorf("paused %v", st.paused)
	}
	if len(st.triggers) != 1 || st.triggers["good@manual-1"].Scheduled.IsZero() {
		t.Errorf("triggers %v, want the trusted one alone", st.triggers)
	}
	for path, why := range map[string]string{
		JobPath("alias"):                `named "real"`,
		JobPath("garbled"):              "invalid job",
		JobPath("fromfile"):             "the --jobs file defines a job",
		JobPath("planted"):              "world:anyone",
		JobPath("unchecked"):            "invalid job",
		TriggersPath + "/good@manual-2": "world:anyone",
	} {
		if !strings.Contains(refused[path], why) {
			t.Errorf("refusal of %s = %q, want it to say %q", path, refused[path], why)
		}
	}
	if len(refused) != 6 {
		t.Errorf("%d refusals, want 6: %v", len(refused), refused)
	}
}
