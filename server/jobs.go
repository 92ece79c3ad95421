package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/shepherd-dev/shepherd/scheduler"
)

// Jobs defined from the console: the same Admin methods and the same
// validation (scheduler.Job.Validate) as `shepherd ctl job add` and `rm`.

// jobView is a job as the API shows it: its status, and the version of
// its stored node — the ETag of a conditional PUT — when it is stored.
type jobView struct {
	JobStatus
	Version *int32 `json:"specVersion,omitempty"`
}

// job is a job's status from the newest snapshot, or read now for a job
// newer than it (just created).
func (s *Server) job(ctx context.Context, name string) (JobStatus, error) {
	snap, err := s.snapshot()
	if err != nil {
		return JobStatus{}, err
	}
	if j, ok := snap.Job(name); ok {
		return j, nil
	}
	return scheduler.NewAdmin(s.deps.Session).Job(ctx, name, 0)
}

// readJob is a job as the API and its page show it: the stored
// definition and its node's version from one read now (so that the ETag
// is the version of the definition shown), the rest from the snapshot —
// all read now when the snapshot has not caught up with the stored
// definition (an answer to a change shows the change).
func (s *Server) readJob(ctx context.Context, name string) (jobView, error) {
	a := scheduler.NewAdmin(s.deps.Session)
	stored, version, err := a.JobVersion(ctx, name)
	if err != nil && !errors.Is(err, scheduler.ErrNoSuchJob) && !errors.Is(err, scheduler.ErrInvalidJob) {
		return jobView{}, err
	}
	readable := err == nil
	v := jobView{}
	if err == nil || errors.Is(err, scheduler.ErrInvalidJob) {
		v.Version = &version
	}
	js, err := s.job(ctx, name)
	if err != nil {
		return jobView{}, err
	}
	if readable && len(js.FileHosts) == 0 && (!js.Stored || !bytes.Equal(js.Job.Encode(), stored.Redacted().Encode())) {
		if js, err = a.Job(ctx, name, 0); err != nil {
			return jobView{}, err
		}
	}
	v.JobStatus = js
	return v, nil
}

func (s *Server) apiJob(w http.ResponseWriter, r *http.Request, p principal) error {
	v, err := s.readJob(r.Context(), r.PathValue("job"))
	if err != nil {
		return err
	}
	if v.Version != nil {
		w.Header().Set("ETag", etag(*v.Version))
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// readJobBody decodes a job body — the JSON stored at
// /scheduler/jobs/<name>, the fields of a jobs file entry — and validates
// it as `ctl job add` does. Every error names the field.
func readJobBody(w http.ResponseWriter, r *http.Request) (scheduler.Job, error) {
	var raw json.RawMessage
	if err := readJSON(w, r, &raw); err != nil {
		return scheduler.Job{}, err
	}
	var j scheduler.Job
	if err := decodeJob(raw, &j); err != nil {
		return j, errorf(http.StatusBadRequest, "invalid", "request body: "+badField(raw, err))
	}
	return j, j.Validate()
}

func decodeJob(data []byte, j *scheduler.Job) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(j)
}

// badField words a decoding error of a job body with the field it is
// about: a value's own decoder (a duration's) does not say.
func badField(raw []byte, err error) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return err.Error()
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		var j scheduler.Job
		if ferr := decodeJob(one, &j); ferr != nil {
			if strings.Contains(ferr.Error(), k) {
				return ferr.Error()
			}
			return k + ": " + ferr.Error()
		}
	}
	return err.Error()
}

// redactedJob is j with its environment values hidden, for the audit log.
func redactedJob(j scheduler.Job) scheduler.Job { return j.Redacted() }

func (s *Server) apiCreateJob(w http.ResponseWriter, r *http.Request, p principal) error {
	j, err := readJobBody(w, r)
	if err == nil {
		err = scheduler.NewAdmin(s.deps.Session).CreateJob(r.Context(), j)
	}
	s.record(r, p, "job.create", "job/"+j.Name, nil, redactedJob(j), err)
	if err != nil {
		return err
	}
	v, err := s.readJob(r.Context(), j.Name)
	if err != nil {
		return err
	}
	if v.Version != nil {
		w.Header().Set("ETag", etag(*v.Version))
	}
	w.Header().Set("Location", "/api/v1/jobs/"+j.Name)
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) apiUpdateJob(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("job")
	version, err := ifMatch(r, "GET /api/v1/jobs/{job}")
	if err != nil {
		return err
	}
	j, err := readJobBody(w, r)
	if err != nil {
		return err
	}
	if j.Name != name {
		return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("name %q in the body of PUT /api/v1/jobs/%s: a job cannot be renamed: create the new one and delete this one", j.Name, name))
	}
	a := scheduler.NewAdmin(s.deps.Session)
	old, _, err := a.JobVersion(r.Context(), name)
	if err != nil && !errors.Is(err, scheduler.ErrInvalidJob) {
		return err
	}
	var before any
	if err == nil {
		before = redactedJob(old)
	}
	if err := keepEnv(&j, old, err == nil); err != nil {
		return err
	}
	err = a.UpdateJob(r.Context(), j, version)
	s.record(r, p, "job.update", "job/"+name, before, redactedJob(j), err)
	if err != nil {
		return err
	}
	return s.apiJob(w, r, p)
}

// keepEnv puts the stored environment values back where an edited job
// still holds the placeholder it was shown (scheduler.RedactedValue).
// Only for the same program, arguments and directory: a user who may
// not read the values could otherwise hand them to a program of their
// choosing, so they must type them again — as keepPasswords does for a
// task's passwords.
func keepEnv(j *scheduler.Job, old scheduler.Job, haveOld bool) error {
	if err := keepHeaders(j, old, haveOld); err != nil {
		return err
	}
	keys := make([]string, 0, len(j.Env))
	for k, v := range j.Env {
		if v == scheduler.RedactedValue {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := old.Env[k]
		switch {
		case !haveOld || !ok:
			return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("env.%s: %s stands for a stored value, and %s has none: type the value", k, scheduler.RedactedValue, j.Name))
		case j.Command != old.Command || j.Func != old.Func || j.Dir != old.Dir || !slices.Equal(j.Args, old.Args):
			return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("env.%s: the stored value is kept only for the same command, args and dir: type it again", k))
		}
		j.Env[k] = v
	}
	return nil
}

// keepHeaders is keepEnv for an HTTP job's header values: kept only for
// the same URL and method, where they would go.
func keepHeaders(j *scheduler.Job, old scheduler.Job, haveOld bool) error {
	if j.HTTP == nil {
		return nil
	}
	keys := make([]string, 0, len(j.HTTP.Headers))
	for k, v := range j.HTTP.Headers {
		if v == scheduler.RedactedValue {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		var v string
		ok := haveOld && old.HTTP != nil
		if ok {
			v, ok = old.HTTP.Headers[k]
		}
		switch {
		case !ok:
			return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("http.headers.%s: %s stands for a stored value, and %s has none: type the value", k, scheduler.RedactedValue, j.Name))
		case j.HTTP.URL != old.HTTP.URL || j.HTTP.Method != old.HTTP.Method:
			return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("http.headers.%s: the stored value is kept only for the same url and method: type it again", k))
		}
		j.HTTP.Headers[k] = v
	}
	return nil
}

func (s *Server) apiDeleteJob(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("job")
	a := scheduler.NewAdmin(s.deps.Session)
	old, version, err := a.JobVersion(r.Context(), name)
	if err != nil && !errors.Is(err, scheduler.ErrInvalidJob) {
		return err
	}
	var before any
	if err == nil {
		before = redactedJob(old)
	}
	if r.Header.Get("If-Match") != "" {
		want, err := ifMatch(r, "GET /api/v1/jobs/{job}")
		if err != nil {
			return err
		}
		if want != version {
			return errorf(http.StatusPreconditionFailed, "version_conflict", fmt.Sprintf("job %s is at version %d, not %d: read it again", name, version, want))
		}
	}
	err = a.RemoveJob(r.Context(), name)
	s.record(r, p, "job.delete", "job/"+name, before, nil, err)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// apiJobRunOutput answers a run's output as the scheduler keeps it in
// the run's result (its tail: the full log stays on the host that ran
// it), as a text file.
func (s *Server) apiJobRunOutput(w http.ResponseWriter, r *http.Request, p principal) error {
	name, key := r.PathValue("job"), r.PathValue("run")
	if _, err := s.job(r.Context(), name); err != nil {
		return err
	}
	noRun := errorf(http.StatusNotFound, "not_found", fmt.Sprintf("job %s has no finished run %q (running, or no such run: GET /api/v1/jobs/%s/runs)", name, key, name))
	if _, _, ok := scheduler.ParseRunKey(key); !ok {
		return noRun
	}
	res, ok, err := scheduler.NewAdmin(s.deps.Session).ReadResult(r.Context(), name, key)
	if err != nil {
		return err
	}
	if !ok {
		return noRun
	}
	file := strings.Map(func(c rune) rune {
		if c == '-' || c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
			return c
		}
		return '_'
	}, name+"-"+key)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+file+`.txt"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(res.Output))
	return nil
}
