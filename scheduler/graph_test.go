package scheduler

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func after(jobs ...string) []Dependency {
	out := make([]Dependency, len(jobs))
	for i, j := range jobs {
		out[i] = Dependency{Job: j}
	}
	return out
}

// TestValidateAfterNamesTheField: bad dependencies are errors naming the
// field of the entry.
func TestValidateAfterNamesTheField(t *testing.T) {
	many := make([]string, MaxUpstream+1)
	for i := range many {
		many[i] = "u" + strings.Repeat("x", i)
	}
	for _, tt := range []struct {
		name string
		edit func(j *Job)
		want string // empty: valid
	}{
		{"valid", func(j *Job) { j.After = after("extract", "clean"); j.WhenUpstream = UpstreamAny }, ""},
		{"self", func(j *Job) { j.After = after("load") }, "after[0].job: a job cannot wait for itself"},
		{"twice", func(j *Job) { j.After = after("a", "a") }, `after[1].job: "a" is listed twice`},
		{"empty name", func(j *Job) { j.After = after("") }, "after[0].job: missing"},
		{"bad name", func(j *Job) { j.After = after("x", "a/b") }, `after[1].job: "a/b"`},
		{"same variable", func(j *Job) { j.After = after("a-b", "a.b") }, "SHEPHERD_UPSTREAM_A_B"},
		{"same _FILE variable", func(j *Job) { j.After = after("a", "a_file") }, "SHEPHERD_UPSTREAM_A_FILE"},
		{"too many", func(j *Job) { j.After = after(many...) }, "after: 33 jobs: at most 32"},
		{"bad condition", func(j *Job) { j.After = after("a"); j.WhenUpstream = "done" }, `whenUpstream: "done"`},
		{"condition without after", func(j *Job) { j.WhenUpstream = UpstreamAny }, "whenUpstream: set without after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{Name: "load", Schedule: "@daily", Command: "true"}
			tt.edit(&j)
			err := j.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want valid", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want ErrInvalidJob mentioning %q", err, tt.want)
			}
		})
	}
}

// TestParseJobsRefusesCycle: a jobs file whose dependencies make a cycle
// is refused, the error naming the job, the field and the cycle.
func TestParseJobsRefusesCycle(t *testing.T) {
	_, err := ParseJobs([]byte(`jobs:
- {name: extract, schedule: "@daily", command: "true", after: [{job: load}]}
- {name: transform, schedule: "@daily", command: "true", after: [{job: extract}]}
- {name: load, schedule: "@daily", command: "true", after: [{job: transform}]}
`))
	if err == nil || !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), `job "extract": after: cycle extract → load → transform → extract`) {
		t.Fatalf("ParseJobs = %v, want the cycle through extract", err)
	}
	if _, err := ParseJobs([]byte("jobs:\n- {name: a, schedule: '@daily', command: 'true', after: [{job: b, when: x}]}\n")); err == nil || !strings.Contains(err.Error(), "when") {
		t.Fatalf("ParseJobs with an unknown field in after = %v, want an error naming it", err)
	}
	if _, err := New(nil, Options{Jobs: []Job{
		{Name: "a", Schedule: "@daily", Command: "true", After: after("b")},
		{Name: "b", Schedule: "@daily", Command: "true", After: after("a")},
	}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("New with a cycle = %v, want it refused", err)
	}
}

// TestCheckCyclesThrough: only cycles through the jobs named are
// reported, so that one bad pair does not block every other change.
func TestCheckCyclesThrough(t *testing.T) {
	jobs := []Job{
		{Name: "a", After: after("b")}, {Name: "b", After: after("a")}, // an old cycle
		{Name: "x", After: after("a")}, {Name: "y", After: after("x", "z")},
	}
	if err := CheckCycles(jobs, "x", "y"); err != nil {
		t.Errorf("CheckCycles through x, y = %v, want nil", err)
	}
	if err := CheckCycles(jobs, "b"); err == nil || !strings.Contains(err.Error(), "b → a → b") {
		t.Errorf("CheckCycles through b = %v, want b → a → b", err)
	}
	if err := CheckCycles(jobs); err == nil {
		t.Error("CheckCycles of all = nil, want the cycle")
	}
}

// TestBuildGraph: levels, downstream jobs, unknown upstream jobs and
// cycles; a job given twice has the union of its dependencies.
func TestBuildGraph(t *testing.T) {
	g := BuildGraph([]Job{
		{Name: "load", After: after("transform"), WhenUpstream: UpstreamAny},
		{Name: "transform", After: after("extract")},
		{Name: "extract"},
		{Name: "report", After: after("load", "ghost")},
		{Name: "report", After: after("transform")},
		{Name: "p", After: after("q")}, {Name: "q", After: after("p")},
		{Name: "behind", After: after("p")},
	})
	var got []string
	for _, j := range g.Jobs {
		got = append(got, j.Name+":"+string(rune('0'+j.Level+1)))
	}
	// Level+1: '0' is on or behind a cycle.
	want := []string{"extract:1", "transform:2", "load:3", "report:4", "behind:0", "p:0", "q:0"}
	if !slices.Equal(got, want) {
		t.Errorf("order and levels %v, want %v", got, want)
	}
	byName := map[string]GraphJob{}
	for _, j := range g.Jobs {
		byName[j.Name] = j
	}
	if r := byName["report"]; !slices.Equal(r.After, []string{"load", "ghost", "transform"}) || !slices.Equal(r.Unknown, []string{"ghost"}) || r.WhenUpstream != UpstreamSucceeded {
		t.Errorf("report = %+v, want after load, ghost, transform; ghost unknown; when succeeded", r)
	}
	if d := byName["transform"].Downstream; !slices.Equal(d, []string{"load", "report"}) {
		t.Errorf("transform's downstream %v, want load, report", d)
	}
	if byName["load"].WhenUpstream != UpstreamAny || byName["extract"].WhenUpstream != "" {
		t.Errorf("whenUpstream of load %q, extract %q; want any and none", byName["load"].WhenUpstream, byName["extract"].WhenUpstream)
	}
	if len(g.Cycles) != 1 || !slices.Equal(g.Cycles[0], []string{"p", "q", "p"}) {
		t.Errorf("cycles %v, want [p q p]", g.Cycles)
	}
}

// TestDecideUpstream: what a waiting master does for each condition.
func TestDecideUpstream(t *testing.T) {
	ok, bad := Result{Status: Succeeded}, Result{Status: Failed}
	for _, tt := range []struct {
		when Condition
		got  map[string]Result
		want upstreamVerdict
		why  string
	}{
		{"", nil, upstreamWait, ""},
		{"", map[string]Result{"a": ok}, upstreamWait, ""},
		{"", map[string]Result{"a": ok, "b": ok}, upstreamRun, ""},
		{"", map[string]Result{"b": bad}, upstreamBlock, "b failed"}, // blocked before a ends
		{UpstreamSucceeded, map[string]Result{"a": {Status: Blocked}, "b": ok}, upstreamBlock, "a blocked"},
		{UpstreamFailed, map[string]Result{"b": bad}, upstreamWait, ""},
		{UpstreamFailed, map[string]Result{"a": ok, "b": bad}, upstreamRun, ""},
		{UpstreamFailed, map[string]Result{"a": ok, "b": ok}, upstreamBlock, "every upstream run succeeded"},
		{UpstreamAny, map[string]Result{"a": bad}, upstreamWait, ""},
		{UpstreamAny, map[string]Result{"a": bad, "b": {Status: Missed}}, upstreamRun, ""},
	} {
		p, err := compile(Job{Name: "j", Schedule: "@daily", Command: "true", After: after("a", "b"), WhenUpstream: tt.when})
		if err != nil {
			t.Fatal(err)
		}
		v, why := decideUpstream(p, tt.got)
		if v != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("when %q with %v: %v %q, want %v %q", tt.when, tt.got, v, why, tt.want, tt.why)
		}
	}
}

// TestUpstreamEnvAndFiles: the variables a command gets of its upstream
// runs: the data (small and without NUL), its file, the status.
func TestUpstreamEnvAndFiles(t *testing.T) {
	if got := UpstreamEnv("extract-eu.v2"); got != "SHEPHERD_UPSTREAM_EXTRACT_EU_V2" {
		t.Errorf("UpstreamEnv = %s", got)
	}
	big := []byte(strings.Repeat("x", MaxUpstreamEnv+1))
	dir := t.TempDir()
	env, err := commandEnv(Run{Job: "load", RunKey: "2026-11-22", Attempt: 1, Scheduled: time.Unix(0, 0), Upstream: map[string]Result{
		"small": {Status: Succeeded, Data: []byte("rows=42")},
		"big":   {Status: Succeeded, Data: big},
		"bin":   {Status: Failed, Data: []byte{1, 0, 2}},
	}}, filepath.Join(dir, "result"), dir)
	if err != nil {
		t.Fatal(err)
	}
	has := func(kv string) bool { return slices.Contains(env, kv) }
	for _, kv := range []string{"SHEPHERD_UPSTREAM_SMALL=rows=42", "SHEPHERD_UPSTREAM_SMALL_STATUS=succeeded", "SHEPHERD_UPSTREAM_BIN_STATUS=failed", "SHEPHERD_RUN_KEY=2026-11-22"} {
		if !has(kv) {
			t.Errorf("env lacks %s: %q", kv, env)
		}
	}
	for _, e := range env {
		if strings.HasPrefix(e, "SHEPHERD_UPSTREAM_BIG=") || strings.HasPrefix(e, "SHEPHERD_UPSTREAM_BIN=") {
			t.Errorf("env has %.40s…: data too large or binary belongs in the file only", e)
		}
	}
	for job, want := range map[string][]byte{"small": []byte("rows=42"), "big": big, "bin": {1, 0, 2}} {
		f := filepath.Join(dir, "upstream-"+job)
		if !has(UpstreamEnv(job) + "_FILE=" + f) {
			t.Errorf("env lacks %s_FILE", UpstreamEnv(job))
		}
		if got, err := os.ReadFile(f); err != nil || string(got) != string(want) {
			t.Errorf("file of %s: %d bytes (%v), want %d", job, len(got), err, len(want))
		}
	}
}

// TestDecideStateRefusesStoredCycle: a stored job on a cycle (made by two
// adds at once, or with a file job) is refused, not fired to wait for
// itself; the jobs off the cycle run.
func TestDecideStateRefusesStoredCycle(t *testing.T) {
	enc := func(name string, up ...string) storedNode {
		return storedNode{data: Job{Name: name, Schedule: "@daily", Command: "true", After: after(up...)}.Encode()}
	}
	raw := storedState{jobs: map[string]storedNode{"a": enc("a", "f"), "b": enc("b", "a"), "c": enc("c")}}
	st, refused := decideState([]Job{{Name: "f", Schedule: "@daily", Command: "true", After: after("b")}}, raw)
	if _, ok := st.jobs["c"]; !ok || st.jobs["f"] == nil || st.jobs["a"] != nil || st.jobs["b"] != nil {
		t.Errorf("jobs %v, want c and f (the file's) only", st.jobs)
	}
	if !strings.Contains(refused[JobPath("a")], "cycle a → f → b → a") || !strings.Contains(refused[JobPath("b")], "cycle") || len(refused) != 2 {
		t.Errorf("refused %v, want a and b on their cycle", refused)
	}
}
