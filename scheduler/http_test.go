package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestHTTPJobValidation: errors name the http field.
func TestHTTPJobValidation(t *testing.T) {
	for _, tc := range []struct {
		edit func(j *Job)
		want string // empty: valid
	}{
		{func(j *Job) {}, ""},
		{func(j *Job) { j.HTTP.URL = "" }, "http.url: missing"},
		{func(j *Job) { j.HTTP.URL = "ftp://h/x" }, "http.url"},
		{func(j *Job) { j.HTTP.URL = "https://user:pw@h/x" }, "http.url: credentials in the URL"},
		{func(j *Job) { j.HTTP.Method = "BREW" }, `http.method: "BREW"`},
		{func(j *Job) { j.HTTP.Headers = map[string]string{"Bad Name": "x"} }, `http.headers: "Bad Name"`},
		{func(j *Job) { j.HTTP.Headers = map[string]string{"X-A": "a\r\nb"} }, "http.headers: X-A"},
		{func(j *Job) { j.HTTP.Headers = map[string]string{"idempotency-key": "x"} }, "set by the scheduler"},
		{func(j *Job) { j.HTTP.SuccessStatus = []int{200, 99} }, "http.successStatus: 99"},
		{func(j *Job) { j.Command = "true" }, "http: set one of command, func and http"},
		{func(j *Job) { j.Env = map[string]string{"A": "b"} }, "http: args, env and dir"},
	} {
		j := Job{Name: "call", Schedule: "@daily", HTTP: &HTTPRequest{URL: "https://api.example.com/run", Method: "POST", Headers: map[string]string{"Authorization": "Bearer s3cret"}}}
		tc.edit(&j)
		err := j.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	j := Job{Name: "call", Schedule: "@daily", HTTP: &HTTPRequest{URL: "https://api.example.com/", Headers: map[string]string{"Authorization": "Bearer s3cret"}}}
	if r := j.Redacted(); r.HTTP.Headers["Authorization"] != RedactedValue || j.HTTP.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("Redacted: %v; the job's own: %v", r.HTTP.Headers, j.HTTP.Headers)
	}
	// A jobs file's header values are not published (as env values).
	sc := &Scheduler{opts: Options{Jobs: []Job{j}}, now: time.Now}
	if in := sc.info(); in.FileJobs[0].HTTP.Headers["Authorization"] != RedactedEnv {
		t.Errorf("published headers %v", in.FileJobs[0].HTTP.Headers)
	}
	if _, err := ParseHTTPAllow([]string{"10.0.0.0/8,api.example.com", "a b"}); !errors.Is(err, ErrInvalidHTTPAllow) || !strings.Contains(err.Error(), `"a b"`) {
		t.Errorf("ParseHTTPAllow: %v", err)
	}
}

// recorder is a test HTTP service that records the requests it gets.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Path, Method, Body string
	Header             http.Header
}

func (rc *recorder) record(r *http.Request) recorded {
	b, _ := io.ReadAll(r.Body)
	rec := recorded{Path: r.URL.Path, Method: r.Method, Body: string(b), Header: r.Header.Clone()}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, rec)
	rc.mu.Unlock()
	return rec
}

func (rc *recorder) requests(path string) []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []recorded
	for _, r := range rc.reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// TestHTTPJobs: an HTTP job calls its URL with its method, headers, body
// and the run's headers; its result has the status as exit code and the
// body as data and output tail; a failing status is retried; the body
// is bounded; a host off --http-allow (and a redirect to one) is refused
// without a request and without retries, and a scheduler with no
// --http-allow calls nothing.
func TestHTTPJobs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		rc := &recorder{}
		var flaky sync.Mutex
		flakyCalls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc.record(r)
			switch r.URL.Path {
			case "/ok":
				fmt.Fprint(w, "done 42")
			case "/flaky":
				flaky.Lock()
				flakyCalls++
				n := flakyCalls
				flaky.Unlock()
				if n == 1 {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusAccepted)
			case "/big":
				_, _ = w.Write([]byte(strings.Repeat("x", MaxHTTPResponse+1000)))
			case "/away":
				http.Redirect(w, r, "http://localhost/elsewhere", http.StatusFound)
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		call := func(name, path string, edit func(j *Job)) Job {
			j := Job{Name: name, Schedule: "@yearly", HTTP: &HTTPRequest{URL: srv.URL + path}}
			if edit != nil {
				edit(&j)
			}
			return j
		}
		jobs := []Job{
			call("ok", "/ok", func(j *Job) {
				j.HTTP.Method, j.HTTP.Body = "POST", `{"rebuild":true}`
				j.HTTP.Headers = map[string]string{"Authorization": "Bearer s3cret"}
			}),
			call("flaky", "/flaky", func(j *Job) { j.Retries, j.RetryBackoff = 2, Duration(10*time.Millisecond) }),
			call("big", "/big", nil),
			call("away", "/away", func(j *Job) { j.Retries = 2 }),
			call("unlisted", "/ok", func(j *Job) {
				j.HTTP.URL = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/unlisted"
				j.Retries = 2
			}),
		}
		startScheduler(t, connect, Options{Jobs: jobs, Host: "a", HTTPAllow: []string{"127.0.0.1"}}, nil)
		obs := dial(t, connect)
		a := NewAdmin(obs)
		key, err := a.TriggerRun(context.Background(), "ok", time.Now(), RunRequest{Params: map[string]string{"day": "2026-11-22 x"}})
		if err != nil {
			t.Fatal(err)
		}
		r := awaitResult(t, obs, "ok", key)
		if r.Status != Succeeded || r.ExitCode != 200 || string(r.Data) != "done 42" || !strings.Contains(r.Output, "done 42") || !strings.Contains(r.Output, "< 200 OK") {
			t.Errorf("ok: %+v", r)
		}
		reqs := rc.requests("/ok")
		if len(reqs) != 1 {
			t.Fatalf("requests to /ok: %+v, want one", reqs)
		}
		got := reqs[0]
		for h, want := range map[string]string{
			"Authorization": "Bearer s3cret", "Shepherd-Job": "ok", "Shepherd-Run-Key": key, "Shepherd-Attempt": "1",
			"Idempotency-Key": "ok/" + key, "Shepherd-Param-Day": "2026-11-22%20x",
		} {
			if got.Header.Get(h) != want {
				t.Errorf("header %s = %q, want %q", h, got.Header.Get(h), want)
			}
		}
		if got.Method != "POST" || got.Body != `{"rebuild":true}` {
			t.Errorf("request %s %q", got.Method, got.Body)
		}

		key = trigger(t, obs, "flaky")
		if r := awaitResult(t, obs, "flaky", key); r.Status != Succeeded || r.Attempt != 2 || r.ExitCode != 202 {
			t.Errorf("flaky: %+v, want succeeded at attempt 2 with 202", r)
		}
		if n := len(rc.requests("/flaky")); n != 2 {
			t.Errorf("requests to /flaky: %d, want 2", n)
		}

		key = trigger(t, obs, "big")
		if r := awaitResult(t, obs, "big", key); r.Status != Succeeded || len(r.Data) != MaxHTTPResponse || len(r.Output) > outputTailBytes {
			t.Errorf("big: %s, %d bytes of data, %d of output; want succeeded, %d and at most %d", r.Status, len(r.Data), len(r.Output), MaxHTTPResponse, outputTailBytes)
		}

		for _, job := range []string{"unlisted", "away"} {
			key = trigger(t, obs, job)
			r := awaitResult(t, obs, job, key)
			if r.Status != Failed || r.Attempt != 1 || !strings.Contains(r.Error, "--http-allow") || !strings.Contains(r.Error, `"localhost"`) {
				t.Errorf("%s: %+v, want failed at attempt 1 (no retries) naming --http-allow and the host", job, r)
			}
		}
		if n := len(rc.requests("/unlisted")) + len(rc.requests("/elsewhere")); n != 0 {
			t.Errorf("%d requests to hosts off the list", n)
		}
	})
}

// TestHTTPAllowEmptyRefusesAll: a scheduler without --http-allow calls
// no URL.
func TestHTTPAllowEmptyRefusesAll(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		called := make(chan struct{}, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called <- struct{}{} }))
		defer srv.Close()
		startScheduler(t, connect, Options{Jobs: []Job{{Name: "call", Schedule: "@yearly", HTTP: &HTTPRequest{URL: srv.URL}}}, Host: "a"}, nil)
		obs := dial(t, connect)
		key := trigger(t, obs, "call")
		if r := awaitResult(t, obs, "call", key); r.Status != Failed || !strings.Contains(r.Error, "is not in the --http-allow list of scheduler a") {
			t.Errorf("result %+v, want failed: not in --http-allow", r)
		}
		select {
		case <-called:
			t.Error("the URL was called")
		default:
		}
	})
}

// TestHTTPJobMasterKilled: the master of an HTTP job's run is killed -9
// while its request is in flight: another scheduler makes the request
// again as attempt 2, with the same Idempotency-Key, and its result is
// the run's.
func TestHTTPJobMasterKilled(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		rc := &recorder{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := rc.record(r)
			if rec.Header.Get("Shepherd-Attempt") == "1" {
				<-r.Context().Done() // held until its caller dies
				return
			}
			fmt.Fprint(w, "second")
		}))
		defer srv.Close()
		dir := t.TempDir()
		jobs := fmt.Sprintf("jobs:\n- {name: call, schedule: '@yearly', http: {url: %q}}\n", srv.URL+"/call")
		for i := range 3 {
			host := fmt.Sprintf("s%d", i)
			startChild(t, childConfig{Connect: connect, Jobs: jobs, Host: host, LogDir: filepath.Join(dir, host), HTTPAllow: []string{"127.0.0.1"}})
		}
		obs := dial(t, connect)
		key := trigger(t, obs, "call")
		const path = "/call"
		coordtest.WaitFor(t, 30*time.Second, "attempt 1 in flight", func() error {
			if n := len(rc.requests(path)); n != 1 {
				return fmt.Errorf("%d requests", n)
			}
			return nil
		})
		data, _, err := obs.Get(context.Background(), BindingPath("call", key))
		if err != nil {
			t.Fatal(err)
		}
		var b binding
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(b.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r := awaitResult(t, obs, "call", key)
		if r.Status != Succeeded || r.Attempt != 2 || string(r.Data) != "second" || r.Host == b.Host {
			t.Errorf("result %+v, want succeeded at attempt 2 on another scheduler than %s", r, b.Host)
		}
		reqs := rc.requests(path)
		var attempts, keys []string
		for _, q := range reqs {
			attempts = append(attempts, q.Header.Get("Shepherd-Attempt"))
			keys = append(keys, q.Header.Get("Idempotency-Key"))
		}
		if !slices.Equal(attempts, []string{"1", "2"}) || keys[0] != "call/"+key || keys[1] != keys[0] {
			t.Errorf("requests: attempts %v, keys %v; want 1 and 2 with the key call/%s", attempts, keys, key)
		}
	})
}
