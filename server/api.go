package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// routes installs every route; the OpenAPI document lists the same
// (a test keeps the two in step).
func (s *Server) routes() {
	s.public("GET /health", http.HandlerFunc(s.health))
	s.public("GET /login", http.HandlerFunc(s.loginPage))
	s.public("POST /login", http.HandlerFunc(s.login))
	s.public("POST /logout", http.HandlerFunc(s.logout))
	s.public("GET /static/", staticHandler())
	s.public("GET /favicon.ico", faviconHandler())
	s.public("GET /api/v1/openapi.json", http.HandlerFunc(serveOpenAPI))

	s.handle("GET /api/v1/me", auth.Viewer, s.apiMe)
	s.handle("GET /api/v1/tasks", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		tasks := make([]core.TaskStatus, len(snap.Tasks))
		for i, ts := range snap.Tasks {
			tasks[i] = redactStatus(ts)
		}
		return map[string]any{"tasks": tasks, "error": snap.Errors[cluster.SectionTasks]}
	}))
	s.handle("POST /api/v1/tasks", auth.Admin, s.apiCreateTask)
	s.handle("POST /api/v1/tasks:validate", auth.Operator, s.apiValidate)
	s.handle("GET /api/v1/tasks/{task}", auth.Viewer, s.apiTask)
	s.handle("GET /api/v1/tasks/{task}/series", auth.Viewer, s.apiTaskSeries)
	s.handle("PUT /api/v1/tasks/{task}", auth.Admin, s.apiUpdateTask)
	s.handle("DELETE /api/v1/tasks/{task}", auth.Admin, s.apiDeleteTask)
	s.handle("POST /api/v1/tasks/{task}/start", auth.Operator, s.apiTaskState(core.DesiredRunning))
	s.handle("POST /api/v1/tasks/{task}/stop", auth.Operator, s.apiTaskState(core.DesiredStopped))
	s.handle("POST /api/v1/tasks/{task}/handover", auth.Operator, s.apiHandover)
	s.handle("POST /api/v1/tasks/{task}/switch-source", auth.Operator, s.apiSwitchSource)
	s.handle("POST /api/v1/tasks/{task}/reset-position", auth.Admin, s.apiResetPosition)
	s.handle("POST /api/v1/tasks/{task}/skip-event", auth.Admin, s.apiSkipEvent)
	s.handle("POST /api/v1/tasks/{task}/verify", auth.Operator, s.apiVerify)
	s.handle("GET /api/v1/jobs", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		return map[string]any{"jobs": snap.Jobs, "schedulers": snap.Schedulers, "error": snap.Errors[cluster.SectionJobs]}
	}))
	s.handle("POST /api/v1/jobs", auth.Admin, s.apiCreateJob)
	s.handle("GET /api/v1/jobs/{job}", auth.Viewer, s.apiJob)
	s.handle("PUT /api/v1/jobs/{job}", auth.Admin, s.apiUpdateJob)
	s.handle("DELETE /api/v1/jobs/{job}", auth.Admin, s.apiDeleteJob)
	s.handle("GET /api/v1/jobs/{job}/runs", auth.Viewer, s.apiJobRuns)
	s.handle("GET /api/v1/jobs/{job}/durations", auth.Viewer, s.apiJobDurations)
	s.handle("GET /api/v1/jobs/{job}/runs/{run}/output", auth.Viewer, s.apiJobRunOutput)
	s.handle("POST /api/v1/jobs/{job}/run", auth.Operator, s.apiJobRun)
	s.handle("POST /api/v1/jobs/{job}/pause", auth.Operator, s.apiJobPause(true))
	s.handle("POST /api/v1/jobs/{job}/resume", auth.Operator, s.apiJobPause(false))
	s.handle("GET /api/v1/collectors", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		return map[string]any{"collectors": snap.Collectors, "judged": snap.CollectorsJudged, "error": snap.Errors[cluster.SectionCollectors]}
	}))
	s.handle("GET /api/v1/sources", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		return map[string]any{"sources": snap.Sources, "error": snap.Errors[cluster.SectionCollectors]}
	}))
	s.handle("POST /api/v1/sources", auth.Admin, s.apiChangeSources)
	s.handle("GET /api/v1/coord", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		return map[string]any{"servers": snap.Coord, "session": s.deps.Session.State().String(), "error": snap.Errors[cluster.SectionCoord]}
	}))
	s.serviceRoutes()
	s.handle("GET /api/v1/alerts", auth.Viewer, s.apiAlerts)
	s.handle("POST /api/v1/silences", auth.Operator, s.apiAddSilence)
	s.handle("DELETE /api/v1/silences/{id}", auth.Operator, s.apiRemoveSilence)
	s.handle("GET /api/v1/cores", auth.Viewer, s.apiCores)
	s.handle("GET /api/v1/audit", auth.Viewer, s.apiAudit)
	s.handle("GET /api/v1/events", auth.Viewer, s.apiEvents)
	s.handle("GET /api/v1/users", auth.Admin, s.apiUsers)
	s.handle("GET /api/v1/znodes", auth.Admin, s.apiZnode)
	s.handle("POST /api/v1/users", auth.Admin, s.apiAddUser)
	s.handle("DELETE /api/v1/users/{user}", auth.Admin, s.apiRemoveUser)
	s.handle("POST /api/v1/tokens", auth.Admin, s.apiCreateToken)
	s.handle("DELETE /api/v1/tokens/{id}", auth.Admin, s.apiRevokeToken)

	s.uiRoutes()
}

// public installs a route that needs no login.
func (s *Server) public(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}

// health answers 200 while the coordination session is connected.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	st := s.deps.Session.State()
	if !st.Connected() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "session": st.String()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "session": st.String()})
}

func (s *Server) apiMe(w http.ResponseWriter, r *http.Request, p principal) error {
	writeJSON(w, http.StatusOK, map[string]any{"user": p.User, "role": p.Role, "via": p.Via, "readOnly": s.cfg.ReadOnly})
	return nil
}

// snapshot is the newest snapshot, or 503 before the first.
func (s *Server) snapshot() (*Snapshot, error) {
	snap := s.deps.Feed.Latest()
	if snap == nil {
		return nil, errorf(http.StatusServiceUnavailable, "not_ready", "the console has not read the cluster yet: retry in a moment")
	}
	return snap, nil
}

// fromSnapshot answers a GET with parts of the newest snapshot and the
// time it was read.
func (s *Server) fromSnapshot(parts func(snap *Snapshot) map[string]any) handler {
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		snap, err := s.snapshot()
		if err != nil {
			return err
		}
		out := parts(snap)
		out["readAt"] = snap.ReadAt
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// redacted is sp with its passwords hidden; nil for nil.
func redacted(sp *core.Spec) *core.Spec {
	if sp == nil {
		return nil
	}
	return sp.Redacted()
}

// redactStatus returns ts with its spec's passwords hidden.
func redactStatus(ts core.TaskStatus) core.TaskStatus {
	ts.Spec = redacted(ts.Spec)
	return ts
}

// etag is a task node's version as an entity tag.
func etag(version int32) string { return `"` + strconv.Itoa(int(version)) + `"` }

// ifMatch reads the If-Match header: the version the client read, an
// ETag this console sent (a quoted decimal, possibly weak). Anything else
// is refused with 412 rather than read as a number: "-1" would otherwise
// be ZooKeeper's "any version" and overwrite a concurrent edit, and "*"
// would mean any version too.
// read is the request whose ETag is wanted, for the messages.
func ifMatch(r *http.Request, read string) (int32, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return 0, errorf(http.StatusPreconditionRequired, "if_match_required", "send If-Match with the ETag of "+read+" as read, so that a concurrent change is not overwritten")
	}
	tag := strings.TrimPrefix(h, "W/")
	digits, quoted := strings.CutPrefix(tag, `"`)
	digits, closed := strings.CutSuffix(digits, `"`)
	v, err := strconv.ParseInt(digits, 10, 32)
	if !quoted || !closed || err != nil || v < 0 || strconv.FormatInt(v, 10) != digits {
		return 0, errorf(http.StatusPreconditionFailed, "version_conflict", "If-Match "+strconv.Quote(h)+" is not a version: send the ETag of "+read+" as read")
	}
	return int32(v), nil
}

// taskView is one task as the API shows it.
type taskView struct {
	core.TaskStatus
	Version int32 `json:"specVersion"`
	// View is what the task is doing (cluster.ViewTask), as ctl and the
	// monitor see it.
	View cluster.TaskView `json:"view"`
}

// readTask is a task as the API shows it: its spec and the spec node's
// version from one read now (so that the ETag is the version of the spec
// shown, and an answer to a change shows the change), its instances and
// lastCommit from the snapshot — or read now for a task newer than it.
func (s *Server) readTask(ctx context.Context, name string) (taskView, error) {
	sp, version, err := s.tasks.TaskVersion(ctx, name)
	if err != nil && !errors.Is(err, core.ErrInvalidSpec) {
		return taskView{}, err
	}
	specErr := err
	snap, serr := s.snapshot()
	ts, ok := core.TaskStatus{}, false
	if serr == nil {
		ts, ok = snap.Task(name)
	}
	if !ok {
		if ts, err = s.tasks.Task(ctx, name); err != nil {
			return taskView{}, err
		}
	}
	ts.Spec, ts.SpecError = sp, ""
	if specErr != nil {
		ts.SpecError = specErr.Error()
	}
	samples := map[string][]cluster.PosSample{}
	if serr == nil {
		samples = snap.SourceSamples
	}
	return taskView{TaskStatus: redactStatus(ts), Version: version, View: cluster.ViewTask(ts, samples[name], time.Now())}, nil
}

func (s *Server) apiTask(w http.ResponseWriter, r *http.Request, p principal) error {
	tv, err := s.readTask(r.Context(), r.PathValue("task"))
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(tv.Version))
	writeJSON(w, http.StatusOK, tv)
	return nil
}

// readSpec decodes a task spec body (the JSON of `ctl task add`), fills
// in its defaults, validates it, and refuses a database host off the
// --db-allow list.
func (s *Server) readSpec(w http.ResponseWriter, r *http.Request) (*core.Spec, error) {
	var sp core.Spec
	if err := readJSON(w, r, &sp); err != nil {
		return nil, err
	}
	if err := sp.Complete(); err != nil {
		return nil, err
	}
	if sp.Target.TLS != nil {
		// TLS files are read on the cores' hosts: the console does not let
		// its users name files there.
		return nil, errorf(http.StatusBadRequest, "invalid", "target.tls: a Kafka target with TLS is defined with shepherd ctl task add, not in the console")
	}
	if err := s.dbAllow.check(&sp); err != nil {
		return nil, err
	}
	return &sp, nil
}

func (s *Server) apiCreateTask(w http.ResponseWriter, r *http.Request, p principal) error {
	sp, err := s.readSpec(w, r)
	if err == nil {
		err = s.tasks.AddTask(r.Context(), sp, false)
	}
	name := ""
	if sp != nil {
		name = sp.Name
	}
	s.record(r, p, "task.create", "task/"+name, nil, redacted(sp), err)
	if err != nil {
		return err
	}
	tv, err := s.readTask(r.Context(), sp.Name)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(tv.Version))
	w.Header().Set("Location", "/api/v1/tasks/"+sp.Name)
	writeJSON(w, http.StatusCreated, tv)
	return nil
}

func (s *Server) apiUpdateTask(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	version, err := ifMatch(r, "GET /api/v1/tasks/{task}")
	if err != nil {
		return err
	}
	sp, err := s.readSpec(w, r)
	if err != nil {
		return err
	}
	if sp.Name != name {
		return errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("spec name %q in the body of PUT /api/v1/tasks/%s: a task cannot be renamed", sp.Name, name))
	}
	old, _, err := s.tasks.TaskVersion(r.Context(), name)
	if err != nil && !errors.Is(err, core.ErrInvalidSpec) {
		return err
	}
	if err := keepPasswords(sp, old); err != nil {
		return err
	}
	err = s.tasks.UpdateTask(r.Context(), sp, version)
	s.record(r, p, "task.update", "task/"+name, redacted(old), redacted(sp), err)
	if err != nil {
		return err
	}
	return s.apiTask(w, r, p)
}

// keepPasswords puts the stored passwords back where an edited spec
// still holds the placeholder it was shown. Only for the same server and
// account: otherwise a user who may not read the password could send it
// to a server of their choosing (by editing the host, or by testing the
// connection), so they must type it again.
func keepPasswords(sp, old *core.Spec) error {
	for _, e := range []struct {
		field    string
		new, old *core.Endpoint
	}{{"source", &sp.Source.Endpoint, nilEndpoint(old, true)}, {"target", &sp.Target.Endpoint, nilEndpoint(old, false)}} {
		if e.new.Password != core.RedactedPassword {
			continue
		}
		if e.old == nil || e.new.Host != e.old.Host || e.new.Port != e.old.Port || e.new.User != e.old.User ||
			(e.field == "source" && !sameOrFewerCandidates(sp, old)) ||
			(e.field == "target" && !sameTargetServers(&sp.Target, &old.Target)) {
			return errorf(http.StatusBadRequest, "invalid", e.field+".password: the stored password is kept only for the same servers and user (and no new source.hosts); type it again")
		}
		e.new.Password = e.old.Password
	}
	return nil
}

// sameOrFewerCandidates reports whether every source candidate of sp was
// one of old's: the source password goes to each of them.
func sameOrFewerCandidates(sp, old *core.Spec) bool {
	for _, e := range sp.Source.Candidates() {
		if _, ok := old.Source.Candidate(e.Addr()); !ok {
			return false
		}
	}
	return true
}

// sameTargetServers reports whether t is of old's kind and connects to no
// server old does not: the target password goes to each of them.
func sameTargetServers(t, old *core.TargetEndpoint) bool {
	if t.IsMySQL() != old.IsMySQL() || t.Kind != old.Kind && !t.IsMySQL() {
		return false
	}
	was := map[string]bool{}
	for _, s := range old.Servers() {
		was[s.Addr] = true
	}
	for _, s := range t.Servers() {
		if !was[s.Addr] {
			return false
		}
	}
	return true
}

func nilEndpoint(sp *core.Spec, source bool) *core.Endpoint {
	switch {
	case sp == nil:
		return nil
	case source:
		return &sp.Source.Endpoint
	}
	return &sp.Target.Endpoint
}

func (s *Server) apiDeleteTask(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	old, version, err := s.tasks.TaskVersion(r.Context(), name)
	if err != nil && !errors.Is(err, core.ErrInvalidSpec) {
		return err
	}
	if r.Header.Get("If-Match") != "" {
		want, err := ifMatch(r, "GET /api/v1/tasks/{task}")
		if err != nil {
			return err
		}
		if want != version {
			return errorf(http.StatusPreconditionFailed, "version_conflict", fmt.Sprintf("task %s is at version %d, not %d: read it again", name, version, want))
		}
	}
	err = s.tasks.RemoveTask(r.Context(), name)
	s.record(r, p, "task.delete", "task/"+name, redacted(old), nil, err)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) apiTaskState(state string) handler {
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		name := r.PathValue("task")
		before, _, err := s.tasks.TaskVersion(r.Context(), name)
		if err != nil {
			return err
		}
		action := map[string]string{core.DesiredRunning: "task.start", core.DesiredStopped: "task.stop"}[state]
		err = s.tasks.SetState(r.Context(), name, state)
		s.record(r, p, action, "task/"+name, map[string]string{"state": before.State}, map[string]string{"state": state}, err)
		if err != nil {
			return err
		}
		return s.apiTask(w, r, p)
	}
}

func (s *Server) apiHandover(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	h, err := s.tasks.Handover(r.Context(), name)
	s.record(r, p, "task.handover", "task/"+name, map[string]string{"owner": h.From}, map[string]string{"next": h.To}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

// switchRequest is the body of switch-source: the candidate to read.
type switchRequest struct {
	To string `json:"to"`
}

func (s *Server) apiSwitchSource(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	var req switchRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	res, err := s.tasks.SwitchSource(r.Context(), name, req.To, "console "+p.User)
	s.record(r, p, "task.switch-source", "task/"+name, map[string]string{"source": res.From}, map[string]string{"source": res.To}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// resetRequest is the body of reset-position. Confirm must repeat the
// task's name: the UI asks for it, so a slip of the mouse cannot move a
// position.
type resetRequest struct {
	Position string `json:"position"`
	Confirm  string `json:"confirm"`
}

func (s *Server) apiResetPosition(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	var req resetRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Confirm != name {
		return errorf(http.StatusBadRequest, "confirm", fmt.Sprintf("confirm %q: type the task's name, %q, to reset its position", req.Confirm, name))
	}
	pos, err := core.ParsePosition(req.Position)
	if err != nil {
		return err
	}
	res, err := s.tasks.ResetPosition(r.Context(), name, pos, s.deps.Engine, s.log)
	s.record(r, p, "task.reset-position", "task/"+name, map[string]string{"position": res.Before.String()}, map[string]string{"position": res.After.String()}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// apiSkipEvent moves a stopped, failed task past the source transaction
// its failure names; confirm must repeat the task's name.
func (s *Server) apiSkipEvent(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	var req struct {
		Confirm string `json:"confirm"`
	}
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Confirm != name {
		return errorf(http.StatusBadRequest, "confirm", fmt.Sprintf("confirm %q: type the task's name, %q, to skip its failed transaction", req.Confirm, name))
	}
	res, err := s.tasks.SkipEvent(r.Context(), name, s.deps.Engine, s.log)
	s.record(r, p, "task.skip-event", "task/"+name, map[string]string{"position": res.Before.String()}, map[string]string{"position": res.After.String()}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// verifyRequest is the body of verify: the tables (db.table, none:
// all) and whether to repair, which writes to the target and needs the
// admin role.
type verifyRequest struct {
	Tables []string `json:"tables"`
	Repair bool     `json:"repair"`
}

// apiVerify compares the task's source and target (ctl task verify) and
// answers with the report, which is also kept in the task's verify node.
// A report with differences is a 200: the verify ran.
func (s *Server) apiVerify(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	var req verifyRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Repair && !p.Role.Allows(auth.Admin) {
		return errorf(http.StatusForbidden, "forbidden", "a repair writes to the target: this needs the admin role; "+p.User+" is "+string(p.Role))
	}
	rep, err := s.tasks.Verify(r.Context(), name, core.VerifyOptions{Tables: req.Tables, Repair: req.Repair}, s.deps.Engine, s.log)
	s.record(r, p, "task.verify", "task/"+name, nil, map[string]any{"repair": req.Repair, "tables": req.Tables,
		"chunks": rep.Chunks, "differences": rep.Differences, "repaired": rep.Repaired}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

func (s *Server) apiValidate(w http.ResponseWriter, r *http.Request, p principal) error {
	sp, err := s.readSpec(w, r)
	if err != nil {
		return err
	}
	// The console does not read files named by a request: a password
	// file belongs on the cores' hosts, and reading it here would send a
	// file of the console's host to a server the caller chose.
	if sp.Source.PasswordFile != "" || sp.Target.PasswordFile != "" {
		return errorf(http.StatusBadRequest, "invalid", "passwordFile is read on the cores' hosts, not by the console: give the password inline to test the connection (a test stores nothing)")
	}
	old, _, err := s.tasks.TaskVersion(r.Context(), sp.Name)
	if err != nil {
		old = nil
	}
	if err := keepPasswords(sp, old); err != nil {
		return err
	}
	rep, err := s.deps.Validate(r.Context(), sp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

func (s *Server) apiJobRuns(w http.ResponseWriter, r *http.Request, p principal) error {
	j, err := s.job(r.Context(), r.PathValue("job"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j.Runs)
	return nil
}

// runRequest is the body of POST /api/v1/jobs/{job}/run, which may be
// empty: the options of `ctl job run-now`.
type runRequest struct {
	Params map[string]string `json:"params,omitempty"`
	RunKey string            `json:"runKey,omitempty"`
}

func (s *Server) apiJobRun(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("job")
	var req runRequest
	if r.ContentLength != 0 {
		if err := readJSON(w, r, &req); err != nil {
			return err
		}
	}
	if _, err := s.job(r.Context(), name); err != nil {
		return err
	}
	key, err := scheduler.NewAdmin(s.deps.Session).TriggerRun(r.Context(), name, s.deps.Now(), scheduler.RunRequest{RunKey: req.RunKey, Params: req.Params})
	s.record(r, p, "job.run", "job/"+name, nil, map[string]any{"runKey": key, "params": req.Params}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"job": name, "runKey": key})
	return nil
}

func (s *Server) apiJobPause(paused bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		name := r.PathValue("job")
		j, err := s.job(r.Context(), name)
		if err != nil {
			return err
		}
		err = scheduler.NewAdmin(s.deps.Session).SetPaused(r.Context(), name, paused)
		action := map[bool]string{true: "job.pause", false: "job.resume"}[paused]
		s.record(r, p, action, "job/"+name, map[string]bool{"paused": j.Paused}, map[string]bool{"paused": paused}, err)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"job": name, "paused": paused})
		return nil
	}
}

// sourcesChange is the body of POST /api/v1/sources.
type sourcesChange struct {
	Add    []string `json:"add"`
	Remove []string `json:"remove"`
}

func (s *Server) apiChangeSources(w http.ResponseWriter, r *http.Request, p principal) error {
	var req sourcesChange
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Add)+len(req.Remove) == 0 || len(req.Add)+len(req.Remove) > 1000 {
		return errorf(http.StatusBadRequest, "invalid", "give 1 to 1000 URIs in add and remove")
	}
	for _, u := range req.Add {
		if err := collector.ValidateSource(u); err != nil {
			return errorf(http.StatusBadRequest, "invalid", err.Error())
		}
	}
	var added, removed int
	var err error
	if len(req.Add) > 0 {
		added, err = collector.NewAdmin(s.deps.Session).AddSources(r.Context(), req.Add...)
	}
	if err == nil && len(req.Remove) > 0 {
		removed, err = collector.NewAdmin(s.deps.Session).RemoveSources(r.Context(), req.Remove...)
	}
	// A URI may carry a password (https://user:password@host/…).
	s.record(r, p, "sources.change", "sources", map[string][]string{"remove": collector.RedactedURIs(req.Remove)},
		map[string][]string{"add": collector.RedactedURIs(req.Add)}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"added": added, "removed": removed})
	return nil
}

func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request, p principal) error {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errorf(http.StatusBadRequest, "invalid", "limit "+strconv.Quote(v)+": want 1 to 1000")
		}
		limit = n
	}
	log, err := s.readStream(p.Role, r.URL.Query().Get("stream"))
	if err != nil {
		return err
	}
	entries, err := log.List(r.Context(), limit, r.URL.Query().Get("before"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
	return nil
}

// accounts is what the users page and GET /api/v1/users show: never a
// hash or a token.
type accounts struct {
	Users  []auth.Info      `json:"users"`
	Tokens []auth.TokenInfo `json:"tokens"`
}

func (s *Server) readAccounts(ctx context.Context) (accounts, error) {
	users, err := s.users.Users(ctx)
	if err != nil {
		return accounts{}, err
	}
	tokens, err := s.users.Tokens(ctx)
	return accounts{Users: users, Tokens: tokens}, err
}

func (s *Server) apiUsers(w http.ResponseWriter, r *http.Request, p principal) error {
	a, err := s.readAccounts(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// userRequest is the body of POST /api/v1/users.
type userRequest struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
	Replace  bool   `json:"replace"`
}

func (s *Server) apiAddUser(w http.ResponseWriter, r *http.Request, p principal) error {
	var req userRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	role, err := auth.ParseRole(req.Role)
	if err == nil {
		err = s.users.AddUser(r.Context(), req.Name, role, []byte(req.Password), req.Replace)
	}
	s.record(r, p, "user.add", "user/"+req.Name, nil, map[string]any{"role": req.Role, "replace": req.Replace}, err)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": req.Name, "role": string(role)})
	return nil
}

func (s *Server) apiRemoveUser(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("user")
	if name == p.User {
		return errorf(http.StatusConflict, "busy", "you cannot remove your own account: another admin must")
	}
	err := s.users.RemoveUser(r.Context(), name)
	s.record(r, p, "user.remove", "user/"+name, nil, nil, err)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tokenRequest is the body of POST /api/v1/tokens.
type tokenRequest struct {
	User string `json:"user"`
	Note string `json:"note"`
}

// apiCreateToken answers with the token: the only time it is shown.
func (s *Server) apiCreateToken(w http.ResponseWriter, r *http.Request, p principal) error {
	var req tokenRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	tok, ti, err := s.users.CreateToken(r.Context(), req.User, req.Note)
	s.record(r, p, "token.create", "token/"+ti.ID, nil, map[string]string{"user": req.User, "note": req.Note}, err)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "id": ti.ID, "user": ti.User, "note": ti.Note})
	return nil
}

func (s *Server) apiRevokeToken(w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	err := s.users.RevokeToken(r.Context(), id)
	s.record(r, p, "token.revoke", "token/"+id, nil, nil, err)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// record writes an audit entry of a mutating action; a failed write is
// logged (the action has happened and cannot be undone for it).
func (s *Server) record(r *http.Request, p principal, action, target string, before, after any, err error) {
	e := audit.Entry{Time: s.deps.Now().UTC(), User: p.User, Role: string(p.Role), Via: p.Via, Remote: s.remoteAddr(r),
		Action: action, Target: target, Before: before, After: after}
	if err != nil {
		e.Error = err.Error()
	}
	if werr := s.audit.Write(context.WithoutCancel(r.Context()), e); werr != nil {
		s.log.Error("audit entry not written", "action", action, "target", target, "user", p.User, "err", werr)
	}
}
