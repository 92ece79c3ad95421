package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

const jobJSON = `{"name":"report","schedule":"0 3 * * *","command":"/usr/local/bin/report","args":["--day","yesterday"],
"env":{"API_TOKEN":"tok-secret","MODE":"full"},"timeout":"10m","retries":2,"concurrencyPolicy":"forbid"}`

// TestJobLifecycleThroughTheAPI: an admin creates, reads (with an ETag),
// edits conditionally and deletes a stored job; bad input is refused
// with a 400 naming the field, as `ctl job add` refuses it (the same
// Validate); every change is audited with before and after; no
// environment value is ever in an answer or the audit log, and one left
// as *** keeps its stored value only for the same program.
func TestJobLifecycleThroughTheAPI(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		admin := c.as("admin")
		jobs := scheduler.NewAdmin(c.session)
		if st, body := c.as("operator").do("POST", "/api/v1/jobs", jobJSON, nil); st != http.StatusForbidden {
			t.Fatalf("create as operator: %d %s", st, body)
		}
		st, body := admin.do("POST", "/api/v1/jobs", jobJSON, nil)
		if st != http.StatusCreated || strings.Contains(body, "tok-secret") || !strings.Contains(body, `"API_TOKEN":"***"`) {
			t.Fatalf("create: %d %s", st, body)
		}
		etag := admin.last.Header.Get("ETag")
		if etag != `"0"` || admin.last.Header.Get("Location") != "/api/v1/jobs/report" {
			t.Fatalf("create: ETag %q, Location %q", etag, admin.last.Header.Get("Location"))
		}
		stored, err := jobs.LoadJob(t.Context(), "report")
		if err != nil || stored.Env["API_TOKEN"] != "tok-secret" || stored.Timeout.D().Minutes() != 10 || stored.ConcurrencyPolicy != scheduler.Forbid {
			t.Fatalf("stored: %+v, %v", stored, err)
		}
		bad := func(field, value string) string { // jobJSON with one field changed
			var m map[string]any
			_ = json.Unmarshal([]byte(jobJSON), &m)
			m["name"] = "other"
			var v any
			_ = json.Unmarshal([]byte(value), &v)
			m[field] = v
			b, _ := json.Marshal(m)
			return string(b)
		}
		for _, tc := range []struct {
			method, path, body string
			hdr                map[string]string
			status             int
			code, field        string
		}{
			{"POST", "/api/v1/jobs", jobJSON, nil, http.StatusConflict, "exists", "report"},
			{"POST", "/api/v1/jobs", bad("name", `"-bad"`), nil, http.StatusBadRequest, "invalid", "name"},
			{"POST", "/api/v1/jobs", bad("schedule", `"61 * * * *"`), nil, http.StatusBadRequest, "invalid", "schedule"},
			{"POST", "/api/v1/jobs", bad("schedule", `""`), nil, http.StatusBadRequest, "invalid", "schedule"},
			{"POST", "/api/v1/jobs", bad("timeZone", `"Mars/Olympus"`), nil, http.StatusBadRequest, "invalid", "timeZone"},
			{"POST", "/api/v1/jobs", bad("command", `""`), nil, http.StatusBadRequest, "invalid", "command"},
			{"POST", "/api/v1/jobs", bad("timeout", `"ten minutes"`), nil, http.StatusBadRequest, "invalid", "timeout"},
			{"POST", "/api/v1/jobs", bad("retryBackoff", `"-1s"`), nil, http.StatusBadRequest, "invalid", "retryBackoff"},
			{"POST", "/api/v1/jobs", bad("retries", `-1`), nil, http.StatusBadRequest, "invalid", "retries"},
			{"POST", "/api/v1/jobs", bad("retries", `"two"`), nil, http.StatusBadRequest, "invalid", "retries"},
			{"POST", "/api/v1/jobs", bad("concurrencyPolicy", `"sometimes"`), nil, http.StatusBadRequest, "invalid", "concurrencyPolicy"},
			{"POST", "/api/v1/jobs", bad("env", `{"A=B":"x"}`), nil, http.StatusBadRequest, "invalid", "env"},
			{"POST", "/api/v1/jobs", bad("historyLimit", `-3`), nil, http.StatusBadRequest, "invalid", "historyLimit"},
			{"POST", "/api/v1/jobs", bad("colour", `"blue"`), nil, http.StatusBadRequest, "invalid", "colour"},
			{"POST", "/api/v1/jobs", `not json`, nil, http.StatusBadRequest, "invalid", ""},
			{"PUT", "/api/v1/jobs/report", jobJSON, nil, http.StatusPreconditionRequired, "if_match_required", "If-Match"},
			{"PUT", "/api/v1/jobs/report", jobJSON, map[string]string{"If-Match": `"7"`}, http.StatusPreconditionFailed, "version_conflict", "version 7"},
			{"PUT", "/api/v1/jobs/report", jobJSON, map[string]string{"If-Match": `"-1"`}, http.StatusPreconditionFailed, "version_conflict", ""},
			{"PUT", "/api/v1/jobs/other", jobJSON, map[string]string{"If-Match": etag}, http.StatusBadRequest, "invalid", "renamed"},
			{"PUT", "/api/v1/jobs/report", strings.Replace(jobJSON, `"0 3 * * *"`, `"0 3 * *"`, 1), map[string]string{"If-Match": etag}, http.StatusBadRequest, "invalid", "schedule"},
			// An environment value left as *** with another program.
			{"PUT", "/api/v1/jobs/report", strings.Replace(strings.Replace(jobJSON, `"tok-secret"`, `"***"`, 1), "/usr/local/bin/report", "/usr/bin/curl", 1),
				map[string]string{"If-Match": etag}, http.StatusBadRequest, "invalid", "env.API_TOKEN"},
			{"PUT", "/api/v1/jobs/report", strings.Replace(jobJSON, `"MODE":"full"`, `"MODE":"full","NEW":"***"`, 1), map[string]string{"If-Match": etag}, http.StatusBadRequest, "invalid", "env.NEW"},
			{"DELETE", "/api/v1/jobs/report", "", map[string]string{"If-Match": `"3"`}, http.StatusPreconditionFailed, "version_conflict", ""},
			{"DELETE", "/api/v1/jobs/nope", "", nil, http.StatusNotFound, "not_found", "nope"},
			{"PUT", "/api/v1/jobs/nope", strings.Replace(jobJSON, `"report"`, `"nope"`, 1), map[string]string{"If-Match": `"0"`}, http.StatusNotFound, "not_found", "nope"},
		} {
			var b any
			if tc.body != "" {
				b = tc.body
			}
			st, body := admin.do(tc.method, tc.path, b, tc.hdr)
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &e)
			if st != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.field) {
				t.Errorf("%s %s %s: %d %s; want %d %s naming %q", tc.method, tc.path, tc.body, st, body, tc.status, tc.code, tc.field)
			}
		}
		if _, err := jobs.LoadJob(t.Context(), "other"); err == nil {
			t.Error("a refused job was stored")
		}

		// Edit as the form does: the job as read, env values *** kept.
		st, body = admin.do("GET", "/api/v1/jobs/report", nil, nil)
		if st != 200 || strings.Contains(body, "tok-secret") || admin.last.Header.Get("ETag") != etag {
			t.Fatalf("get: %d %s (ETag %q)", st, body, admin.last.Header.Get("ETag"))
		}
		var got jobView
		if err := json.Unmarshal([]byte(body), &got); err != nil || got.Version == nil || *got.Version != 0 {
			t.Fatalf("get: %v %s", err, body)
		}
		edit := got.Job
		edit.Schedule, edit.Env["MODE"] = "30 4 * * *", "quick"
		if st, body := admin.do("PUT", "/api/v1/jobs/report", edit, map[string]string{"If-Match": etag}); st != 200 || !strings.Contains(body, `"schedule":"30 4 * * *"`) || strings.Contains(body, "tok-secret") {
			t.Fatalf("update: %d %s", st, body)
		}
		if admin.last.Header.Get("ETag") != `"1"` {
			t.Errorf("ETag after the update: %q", admin.last.Header.Get("ETag"))
		}
		stored, err = jobs.LoadJob(t.Context(), "report")
		if err != nil || stored.Schedule != "30 4 * * *" || stored.Env["API_TOKEN"] != "tok-secret" || stored.Env["MODE"] != "quick" {
			t.Fatalf("stored after update: %+v, %v", stored, err)
		}
		if st, body := admin.do("PUT", "/api/v1/jobs/report", edit, map[string]string{"If-Match": etag}); st != http.StatusPreconditionFailed {
			t.Fatalf("second update with the same ETag: %d %s", st, body)
		}

		// A run's output as text, with its lines.
		key := "manual-2026-11-25T13:01:27.405Z"
		res, _ := json.Marshal(scheduler.Result{Version: 1, Job: "report", RunKey: key, Status: scheduler.Succeeded, Output: "line one\nline two\n"})
		if err := c.session.EnsurePath(t.Context(), scheduler.RunPath("report", key)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.session.Create(t.Context(), scheduler.ResultPath("report", key), res, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		viewer := c.as("viewer")
		st, body = viewer.do("GET", "/api/v1/jobs/report/runs/"+key+"/output", nil, nil)
		if st != 200 || body != "line one\nline two\n" || viewer.last.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			!strings.HasPrefix(viewer.last.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("output: %d %q %v", st, body, viewer.last.Header)
		}
		for _, run := range []string{"2026-11-24", "%2E%2E", "a%2Fb", "not-a-key"} {
			if st, body := viewer.do("GET", "/api/v1/jobs/report/runs/"+run+"/output", nil, nil); st != http.StatusNotFound {
				t.Errorf("output of run %s: %d %s", run, st, body)
			}
		}

		if st, body := admin.do("DELETE", "/api/v1/jobs/report", nil, map[string]string{"If-Match": `"1"`}); st != http.StatusNoContent {
			t.Fatalf("delete: %d %s", st, body)
		}
		if _, err := jobs.LoadJob(t.Context(), "report"); err == nil {
			t.Fatal("the job is still stored")
		}
		st, body = admin.do("GET", "/api/v1/audit", nil, nil)
		var audit struct {
			Entries []struct {
				User, Action, Target, Error string
				Before, After               json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(body), &audit); err != nil || st != 200 {
			t.Fatalf("audit: %d %s", st, body)
		}
		var done []string
		for _, e := range audit.Entries {
			if e.Error == "" {
				done = append(done, e.User+" "+e.Action+" "+e.Target)
			}
			if e.Action == "job.update" && e.Error == "" &&
				(!strings.Contains(string(e.Before), `"schedule":"0 3 * * *"`) || !strings.Contains(string(e.After), `"schedule":"30 4 * * *"`)) {
				t.Errorf("update entry without before/after: %s → %s", e.Before, e.After)
			}
		}
		want := []string{"admin job.delete job/report", "admin job.update job/report", "admin job.create job/report"}
		if !slices.Equal(done, want) {
			t.Errorf("audited successes, newest first: %q, want %q", done, want)
		}
		if strings.Contains(body, "tok-secret") {
			t.Errorf("an environment value in the audit log: %s", body)
		}
	})
}

// TestJobFormPages: the new-job form and the edit form of a stored job
// (its environment values shown as ***, never in clear); a job from a
// jobs file has no edit form.
func TestJobFormPages(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	if err := scheduler.NewAdmin(c.session).StoreJob(context.Background(), mustJob(t, jobJSON)); err != nil {
		t.Fatal(err)
	}
	admin := c.as("admin")
	if st, body := admin.do("GET", "/new/job", nil, nil); st != 200 || !strings.Contains(body, `id="job-form"`) {
		t.Fatalf("new job: %d %s", st, body)
	}
	st, body := admin.do("GET", "/jobs/report/edit", nil, nil)
	if st != 200 || strings.Contains(body, "tok-secret") || !strings.Contains(body, "API_TOKEN=***\nMODE=***") ||
		!strings.Contains(body, `data-version="0"`) || !strings.Contains(body, "--day\nyesterday") || !strings.Contains(body, `value="10m0s"`) {
		t.Fatalf("edit: %d %s", st, body)
	}
	if st, body := admin.do("GET", "/jobs/nope/edit", nil, nil); st != http.StatusNotFound {
		t.Errorf("edit of an unknown job: %d %s", st, body)
	}
	st, body = admin.do("GET", "/jobs/report", nil, nil) // not in the snapshot yet: read now
	if st != 200 || !strings.Contains(body, `id="job-edit"`) || strings.Contains(body, "tok-secret") {
		t.Errorf("job page: %d %s", st, body)
	}
}

func mustJob(t testing.TB, js string) scheduler.Job {
	t.Helper()
	var j scheduler.Job
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestJobDependenciesThroughTheAPI: the console refuses a job that closes
// a dependency cycle (400 naming the field and the cycle, nothing
// stored), as ctl job add does (the same Admin check); the edit form
// shows a job's dependencies, shards, node selector and routing, so
// that saving it keeps them.
func TestJobDependenciesThroughTheAPI(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	if st, body := admin.do("POST", "/api/v1/jobs", `{"name":"a","schedule":"@daily","command":"true","after":[{"job":"b"}],"whenUpstream":"any","shards":4,"nodeSelector":{"zone":"eu","role":"batch"},"routing":"spread"}`, nil); st != http.StatusCreated {
		t.Fatalf("create a: %d %s", st, body)
	}
	st, body := admin.do("POST", "/api/v1/jobs", `{"name":"b","schedule":"@daily","command":"true","after":[{"job":"a"}]}`, nil)
	if st != http.StatusBadRequest || !strings.Contains(body, `after: cycle b → a → b`) {
		t.Fatalf("create b closing a cycle: %d %s; want 400 naming the cycle", st, body)
	}
	if _, err := scheduler.NewAdmin(c.session).LoadJob(t.Context(), "b"); err == nil {
		t.Fatal("a refused job was stored")
	}
	if st, body := admin.do("POST", "/api/v1/jobs", `{"name":"b","schedule":"@daily","command":"true","whenUpstream":"failed"}`, nil); st != http.StatusBadRequest || !strings.Contains(body, "whenUpstream") {
		t.Fatalf("create with whenUpstream and no after: %d %s; want 400 naming whenUpstream", st, body)
	}
	st, body = admin.do("GET", "/jobs/a/edit", nil, nil)
	if st != 200 || !strings.Contains(body, `id="j-after" rows="3">b</textarea>`) || !strings.Contains(body, `<option selected>any</option>`) || !strings.Contains(body, `id="j-shards" type="number" min="0" max="256" step="1" value="4"`) ||
		!strings.Contains(body, `id="j-node-selector" rows="2">role=batch
zone=eu</textarea>`) || !strings.Contains(body, `<option selected>spread</option>`) {
		t.Fatalf("edit form of a: %d %s", st, body)
	}
}

// TestJobRunWithParamsThroughTheAPI: POST /api/v1/jobs/{job}/run takes
// the options of ctl job run-now — parameters, a run key — in an
// optional body; bad ones are a 400 naming the parameter, and store no
// trigger; the audit records the parameters.
func TestJobRunWithParamsThroughTheAPI(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	if err := scheduler.NewAdmin(c.session).StoreJob(context.Background(), mustJob(t, jobJSON)); err != nil {
		t.Fatal(err)
	}
	op := c.as("operator")
	st, body := op.do("POST", "/api/v1/jobs/report/run", `{"params":{"day":"2026-11-22"},"runKey":"2026-11-22"}`, nil)
	if st != http.StatusAccepted || !strings.Contains(body, `"runKey":"2026-11-22"`) {
		t.Fatalf("run with params: %d %s", st, body)
	}
	data, _, err := c.session.Get(t.Context(), scheduler.TriggersPath+"/report@2026-11-22")
	if err != nil || !strings.Contains(string(data), `"params":{"day":"2026-11-22"}`) {
		t.Fatalf("trigger %s (%v), want the parameters", data, err)
	}
	if st, body := op.do("POST", "/api/v1/jobs/report/run", nil, nil); st != http.StatusAccepted {
		t.Fatalf("run without a body: %d %s", st, body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"params":{"a-b":"x"}}`, `param \"a-b\"`},
		{`{"runKey":"tomorrow"}`, "run key"},
		{`{"colour":"blue"}`, "colour"},
	} {
		if st, body := op.do("POST", "/api/v1/jobs/report/run", tc.body, nil); st != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("run with %s: %d %s; want 400 mentioning %s", tc.body, st, body, tc.want)
		}
	}
	kids, _, err := c.session.Children(t.Context(), scheduler.TriggersPath)
	if err != nil || len(kids) != 2 {
		t.Errorf("triggers %v (%v), want the two accepted", kids, err)
	}
	st, body = c.as("admin").do("GET", "/api/v1/audit", nil, nil)
	if st != 200 || !strings.Contains(body, `"params":{"day":"2026-11-22"}`) {
		t.Errorf("audit: %d %s; want the run's parameters", st, body)
	}
}

// TestHTTPJobThroughTheAPI: an HTTP job is created and edited from the
// console: its header values are never shown, are kept when sent back as
// *** for the same URL and method and must be typed again for another;
// the form shows its request.
func TestHTTPJobThroughTheAPI(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	const create = `{"name":"hook","schedule":"@daily","http":{"url":"https://api.example.com/rebuild","method":"POST","headers":{"Authorization":"Bearer s3cret"},"body":"{}","successStatus":[200,202]}}`
	st, body := admin.do("POST", "/api/v1/jobs", create, nil)
	if st != http.StatusCreated || strings.Contains(body, "s3cret") || !strings.Contains(body, `"Authorization":"***"`) {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := admin.do("POST", "/api/v1/jobs", strings.Replace(strings.Replace(create, "hook", "bad", 1), `"POST"`, `"BREW"`, 1), nil); st != http.StatusBadRequest || !strings.Contains(body, "http.method") {
		t.Errorf("create with a bad method: %d %s", st, body)
	}
	st, body = admin.do("GET", "/jobs/hook/edit", nil, nil)
	if st != 200 || strings.Contains(body, "s3cret") || !strings.Contains(body, `value="https://api.example.com/rebuild"`) ||
		!strings.Contains(body, "Authorization: ***") || !strings.Contains(body, `<option selected>POST</option>`) || !strings.Contains(body, `value="200 202"`) {
		t.Fatalf("edit form: %d %s", st, body)
	}
	kept := strings.Replace(strings.Replace(create, "Bearer s3cret", "***", 1), `"body":"{}"`, `"body":"{\"all\":true}"`, 1)
	if st, body := admin.do("PUT", "/api/v1/jobs/hook", kept, map[string]string{"If-Match": `"0"`}); st != 200 {
		t.Fatalf("update keeping the header: %d %s", st, body)
	}
	j, err := scheduler.NewAdmin(c.session).LoadJob(t.Context(), "hook")
	if err != nil || j.HTTP.Headers["Authorization"] != "Bearer s3cret" || j.HTTP.Body != `{"all":true}` {
		t.Fatalf("stored: %+v (%v)", j.HTTP, err)
	}
	moved := strings.Replace(kept, "api.example.com", "evil.example.com", 1)
	if st, body := admin.do("PUT", "/api/v1/jobs/hook", moved, map[string]string{"If-Match": `"1"`}); st != http.StatusBadRequest || !strings.Contains(body, "http.headers.Authorization") {
		t.Errorf("update sending the stored header elsewhere: %d %s; want 400", st, body)
	}
}
