package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateNamesTheBadField(t *testing.T) {
	ok := Job{Name: "daily", Schedule: "0 3 * * *", Command: "true"}
	tests := []struct {
		name string
		edit func(j *Job)
		want string // in the error; empty: valid
	}{
		{"valid five fields", func(j *Job) {}, ""},
		{"valid six fields", func(j *Job) { j.Schedule = "*/5 * * * * *" }, ""},
		{"valid descriptor", func(j *Job) { j.Schedule = "@daily" }, ""},
		{"valid every", func(j *Job) { j.Schedule = "@every 90s" }, ""},
		{"valid CRON_TZ", func(j *Job) { j.Schedule = "CRON_TZ=Asia/Shanghai 0 3 * * *" }, ""},
		{"valid zone", func(j *Job) { j.TimeZone = "Europe/Paris" }, ""},
		{"bad name", func(j *Job) { j.Name = "a/b" }, "name"},
		{"empty name", func(j *Job) { j.Name = "" }, "name"},
		{"empty schedule", func(j *Job) { j.Schedule = " " }, "schedule: empty"},
		{"too many fields", func(j *Job) { j.Schedule = "0 0 3 * * * *" }, "schedule"},
		{"out of range", func(j *Job) { j.Schedule = "0 25 * * *" }, "schedule"},
		{"bad descriptor", func(j *Job) { j.Schedule = "@fortnightly" }, "schedule"},
		{"bad zone", func(j *Job) { j.TimeZone = "Mars/Olympus" }, "timeZone"},
		{"zone conflict", func(j *Job) { j.Schedule = "CRON_TZ=UTC 0 3 * * *"; j.TimeZone = "Europe/Paris" }, "conflicts"},
		{"no command", func(j *Job) { j.Command = "" }, "command: missing"},
		{"command and func", func(j *Job) { j.Func = "f" }, "not both"},
		{"negative timeout", func(j *Job) { j.Timeout = -1 }, "timeout"},
		{"negative retries", func(j *Job) { j.Retries = -1 }, "retries"},
		{"bad policy", func(j *Job) { j.ConcurrencyPolicy = "queue" }, "concurrencyPolicy"},
		{"bad env", func(j *Job) { j.Env = map[string]string{"A=B": "c"} }, "env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.edit(&j)
			err := j.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", j, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidJob mentioning %q", j, err, tt.want)
			}
		})
	}
}

func TestParseJobsErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "jobs:\n- name: a\n  schedule: '@daily'\n  command: true\n  cron: x\n", "field cron not found"},
		{"bad duration", "jobs:\n- name: a\n  schedule: '@daily'\n  command: true\n  timeout: soon\n", "line 5"},
		{"duplicate", "jobs:\n- {name: a, schedule: '@daily', command: 'true'}\n- {name: a, schedule: '@daily', command: 'true'}\n", "used twice"},
		{"bad cron", "jobs:\n- {name: a, schedule: '61 * * * *', command: 'true'}\n", `jobs[0]: scheduler: invalid job: job "a": schedule`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJobs([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseJobs = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	jobs, err := ParseJobs([]byte("jobs:\n- name: a\n  schedule: '@daily'\n  command: sh\n  args: [-c, 'echo hi']\n  timeout: 90s\n"))
	if err != nil || len(jobs) != 1 || jobs[0].Timeout.D() != 90*time.Second || len(jobs[0].Args) != 2 {
		t.Fatalf("ParseJobs = %+v, %v; want one job with a 90s timeout and two args", jobs, err)
	}
}

func TestRunKeys(t *testing.T) {
	at := time.Date(2026, 11, 22, 19, 30, 0, 0, time.UTC) // 03:30 next day in Shanghai
	tests := []struct {
		schedule, zone, want string
	}{
		{"@daily", "", "2026-11-22"},
		{"30 3 * * *", "Asia/Shanghai", "2026-11-23"},
		{"0 */6 * * *", "", "2026-11-22T19:30:00Z"},
		{"@every 1h", "Asia/Shanghai", "2026-11-23T03:30:00+0800"},
		{"@weekly", "", "2026-11-22"},
	}
	for _, tt := range tests {
		p, err := compile(Job{Name: "j", Schedule: tt.schedule, TimeZone: tt.zone, Command: "true"})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.RunKey(at); got != tt.want {
			t.Errorf("%q in %q: RunKey = %q, want %q", tt.schedule, tt.zone, got, tt.want)
		}
	}
}

// TestRunKeyFormat: scheduled and manual keys share RunKeyLayout, and
// ParseRunKey reads every key format a cluster may still hold, old manual
// keys included, so that histories mixing them list in time order.
func TestRunKeyFormat(t *testing.T) {
	at := time.Date(2026, 11, 25, 13, 1, 27, 405e6, time.UTC)
	if got, want := ManualPrefix+at.Format(RunKeyLayout), "manual-2026-11-25T13:01:27.405Z"; got != want {
		t.Errorf("manual key %q, want %q", got, want)
	}
	for _, tt := range []struct {
		key    string
		want   time.Time
		manual bool
	}{
		{"2026-11-25T12:56:48Z", time.Date(2026, 11, 25, 12, 56, 48, 0, time.UTC), false},
		{"2026-11-23T03:30:00+0800", time.Date(2026, 11, 22, 19, 30, 0, 0, time.UTC), false},
		{"2026-11-22", time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), false},
		{"manual-2026-11-25T13:01:27.405Z", at, true},
		{"manual-2026-11-25T13:01:27Z", at.Truncate(time.Second), true},
		{"manual-20261125T130127.405Z", at, true}, // written by earlier versions
	} {
		got, manual, ok := ParseRunKey(tt.key)
		if !ok || !got.Equal(tt.want) || manual != tt.manual {
			t.Errorf("ParseRunKey(%q) = %v, %v, %v; want %v, %v, true", tt.key, got, manual, ok, tt.want, tt.manual)
		}
	}
	if _, _, ok := ParseRunKey("manual-yesterday"); ok {
		t.Error("ParseRunKey(manual-yesterday) is ok")
	}
	runs := []RunInfo{{RunKey: "manual-2026-11-25T13:05:00Z"}, {RunKey: "manual-20261125T130127.405Z"}, {RunKey: "2026-11-25T13:03:00Z"}}
	sortRuns(runs)
	if runs[0].RunKey != "manual-20261125T130127.405Z" || runs[1].RunKey != "2026-11-25T13:03:00Z" {
		t.Errorf("unfinished runs sorted %v, want old manual key, then scheduled, then new manual", runs)
	}
}

// TestEveryIsAnchored checks that @every fires at the same instants in
// every process, whenever it started.
func TestEveryIsAnchored(t *testing.T) {
	p, err := compile(Job{Name: "j", Schedule: "@every 10s", Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	a := p.sched.Next(time.Unix(1000003, 0))
	b := p.sched.Next(time.Unix(1000007, 500))
	if !a.Equal(b) || a.Unix() != 1000010 {
		t.Fatalf("Next from two start times = %v and %v, want both at unix 1000010", a.Unix(), b.Unix())
	}
}
