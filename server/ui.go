package server

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

//go:embed web/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageTime is how pages show a time.
const pageTime = "2006-01-02 15:04:05Z"

// pages are the UI's templates, each parsed with the layout.
type pages struct{ t map[string]*template.Template }

var pageNames = []string{"login", "overview", "tasks", "task", "taskform", "jobs", "job", "jobform", "collectors", "services", "coord", "alerts", "audit", "users", "znodes"}

// humanSeconds renders seconds as "850ms", "12.5s" or "3m5s".
func humanSeconds(x float64) string {
	return cluster.HumanDuration(time.Duration(x * float64(time.Second)))
}

// humanRate renders a rate per second: one decimal below 10, else whole.
func humanRate(x float64) string {
	if x < 10 {
		return strconv.FormatFloat(x, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(x, 'f', 0, 64) + "/s"
}

// newPages parses the templates; rates are the collectors'.
func newPages(rates *lineRates) (*pages, error) {
	funcs := template.FuncMap{
		"json": func(v any) string {
			b, _ := json.MarshalIndent(v, "", "  ")
			return string(b)
		},
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return time.Since(t).Round(time.Second).String() + " ago"
		},
		"time": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(pageTime)
		},
		// human is how long ago t was ("3m ago"), or how far ahead.
		"human": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return humanAgo(time.Since(t))
		},
		"labels": monitor.FormatLabels,
		"dur": func(a, b time.Time) string {
			if a.IsZero() || b.IsZero() {
				return ""
			}
			return b.Sub(a).Round(time.Millisecond).String()
		},
		"lower": strings.ToLower,
		"rate": func(c string) string {
			if r, ok := rates.rate(c); ok {
				return fmt.Sprintf("%.1f", r)
			}
			return "…"
		},
		// secs and perSecond render an instance's lag and rate for
		// people (console.js has the same two).
		"secs":      humanSeconds,
		"perSecond": humanRate,
		"parent":    path.Dir,
		"child":     func(dir, name string) string { return path.Join(dir, name) },
		"join":      strings.Join,
		// endpoint feeds taskform's "endpoint" block, one per side of a task.
		"endpoint": func(legend, key string, e core.Endpoint) endpointField {
			return endpointField{Legend: legend, Key: key, E: e}
		},
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "web/layout.html", "web/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("server: template %s: %w", n, err)
		}
		p.t[n] = t
	}
	return p, nil
}

// endpointField is one side (source or target) of the task form.
type endpointField struct {
	Legend, Key string
	E           core.Endpoint
}

// pageData is what every template gets.
type pageData struct {
	Title      string
	User       string
	Role       auth.Role
	CanOperate bool // start, stop, handover, run, pause
	CanAdmin   bool // define, edit, delete, reset-position
	IsAdmin    bool // sees the users page (even when read-only)
	ReadOnly   bool
	Error      string
	Next       string
	Snap       *Snapshot
	// Alerts are the monitor's, as read for Snap; Banner is the line
	// every page shows while a critical alert fires.
	Alerts *alertBoard
	Banner alertBanner
	// Own are the firing alerts of the task or job a page shows.
	Own  []alertView
	Data any
}

func (p *pages) render(w http.ResponseWriter, r *http.Request, name string, d pageData) {
	var buf bytes.Buffer
	if err := p.t[name].Execute(&buf, d); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.StripPrefix("/static/", http.FileServerFS(sub))
}

// faviconHandler serves the icon browsers ask every page's origin for,
// /favicon.ico, which would otherwise be a 404 in the log and the
// console on every page.
func faviconHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, staticFS, "static/favicon.ico")
	})
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.pages.render(w, r, "login", pageData{Title: "Log in", Next: safeNext(r.URL.Query().Get("next"))})
}

// page installs a UI page for viewers and above.
func (s *Server) page(pattern, name string, data func(r *http.Request, d *pageData) error) {
	s.handle(pattern, auth.Viewer, func(w http.ResponseWriter, r *http.Request, p principal) error {
		snap, err := s.snapshot()
		if err != nil {
			return err
		}
		d := pageData{Title: name, User: p.User, Role: p.Role, ReadOnly: s.cfg.ReadOnly, Snap: snap,
			CanOperate: !s.cfg.ReadOnly && p.Role.Allows(auth.Operator),
			CanAdmin:   !s.cfg.ReadOnly && p.Role.Allows(auth.Admin), IsAdmin: p.Role.Allows(auth.Admin)}
		d.Alerts = s.alertsFor(r.Context(), snap)
		d.Banner = d.Alerts.Banner()
		if data != nil {
			if err := data(r, &d); err != nil {
				return err
			}
		}
		s.pages.render(w, r, name, d)
		return nil
	})
}

// taskPage is the data of the task page.
type taskPage struct {
	View    taskView
	Summary liveTask
	Spec    *core.Spec
	// Candidates are the source's host:port candidates, the primary
	// first, when the spec has others; Reading is the one read now.
	Candidates []string
	Reading    string
	// Standby is the task form's note on its standby: whether a live
	// core serves it.
	Standby standbyCheck
}

// sourceCandidates fills in the page's source candidates.
func (p *taskPage) sourceCandidates() {
	if p.Spec == nil || len(p.Spec.Source.Hosts) == 0 {
		return
	}
	for _, e := range p.Spec.Source.Candidates() {
		p.Candidates = append(p.Candidates, e.Addr())
	}
	var lc core.LastCommit
	if p.View.LastCommit != nil {
		lc = *p.View.LastCommit
	}
	p.Reading = p.Spec.ActiveSource(lc).Addr()
}

// formStandby is the task form's standby note for sp; for a new task
// (fill) it first sets sp's standby to the default of the live cores.
// When the cores cannot be read the form keeps hot standby and says so.
func (s *Server) formStandby(ctx context.Context, sp *core.Spec, fill bool) standbyCheck {
	rep, err := s.readCores(ctx, "", "", "")
	if err != nil {
		return standbyCheck{Mode: sp.Standby.Mode, Group: sp.Standby.Group, Note: "could not read the live cores: " + err.Error()}
	}
	if fill {
		sp.Standby = rep.Default
	}
	snap, _ := s.snapshot()
	return checkStandby(rep.Groups, snap, sp.Standby.Mode, sp.Standby.Group, sp.Name)
}

func (s *Server) uiRoutes() {
	s.page("GET /{$}", "overview", func(r *http.Request, d *pageData) error {
		d.Title = "Overview"
		d.Data = summarize(d.Snap)
		return nil
	})
	s.page("GET /tasks", "tasks", func(r *http.Request, d *pageData) error {
		d.Title = "Tasks"
		d.Data = summarize(d.Snap).Tasks
		return nil
	})
	s.page("GET /tasks/{task}", "task", func(r *http.Request, d *pageData) error {
		tv, err := s.readTask(r.Context(), r.PathValue("task"))
		if err != nil {
			return err
		}
		d.Title = "Task " + tv.Name
		snap, _ := s.snapshot()
		page := taskPage{View: tv, Summary: taskSummary(snap, tv.TaskStatus), Spec: tv.Spec}
		page.sourceCandidates()
		d.Data, d.Own = page, d.Alerts.Firing("task", tv.Name)
		return nil
	})
	s.page("GET /new/task", "taskform", func(r *http.Request, d *pageData) error {
		if !d.CanAdmin {
			return errorf(http.StatusForbidden, "forbidden", "defining tasks needs the admin role")
		}
		d.Title = "New task"
		sp := &core.Spec{State: core.DesiredRunning, Start: core.StartCurrent, Standby: core.Standby{Mode: core.ModeHot},
			Source: core.SourceEndpoint{Endpoint: core.Endpoint{Port: 3306, Flavor: core.FlavorMariaDB}}, Target: core.TargetEndpoint{Endpoint: core.Endpoint{Port: 3306, Flavor: core.FlavorMariaDB}}}
		d.Data = taskPage{Spec: sp, Standby: s.formStandby(r.Context(), sp, true)}
		return nil
	})
	s.page("GET /tasks/{task}/edit", "taskform", func(r *http.Request, d *pageData) error {
		if !d.CanAdmin {
			return errorf(http.StatusForbidden, "forbidden", "editing tasks needs the admin role")
		}
		tv, err := s.readTask(r.Context(), r.PathValue("task"))
		if err != nil {
			return err
		}
		if tv.Spec == nil {
			return errorf(http.StatusConflict, "invalid", "task "+tv.Name+" has no readable spec: "+tv.SpecError)
		}
		if tv.Spec.Target.TLS != nil {
			return errorf(http.StatusConflict, "invalid", "task "+tv.Name+" publishes to Kafka over TLS: edit it with shepherd ctl task add --replace (the console does not name files on the cores' hosts)")
		}
		d.Title = "Edit task " + tv.Name
		d.Data = taskPage{View: tv, Spec: tv.Spec, Standby: s.formStandby(r.Context(), tv.Spec, false)}
		return nil
	})
	s.page("GET /jobs", "jobs", func(r *http.Request, d *pageData) error {
		d.Title = "Jobs"
		d.Data = jobsPage{Jobs: summarize(d.Snap).Jobs, States: gridStates}
		return nil
	})
	s.page("GET /jobs/{job}", "job", func(r *http.Request, d *pageData) error {
		v, err := s.readJob(r.Context(), r.PathValue("job"))
		if err != nil {
			return err
		}
		d.Title = "Job " + v.Name
		d.Data, d.Own = v, d.Alerts.Firing("job", v.Name)
		return nil
	})
	s.page("GET /new/job", "jobform", func(r *http.Request, d *pageData) error {
		if !d.CanAdmin {
			return errorf(http.StatusForbidden, "forbidden", "defining jobs needs the admin role")
		}
		d.Title = "New job"
		d.Data = newJobForm(scheduler.Job{}, nil)
		return nil
	})
	s.page("GET /jobs/{job}/edit", "jobform", func(r *http.Request, d *pageData) error {
		if !d.CanAdmin {
			return errorf(http.StatusForbidden, "forbidden", "editing jobs needs the admin role")
		}
		name := r.PathValue("job")
		j, version, err := scheduler.NewAdmin(s.deps.Session).JobVersion(r.Context(), name)
		switch {
		case errors.Is(err, scheduler.ErrNoSuchJob):
			return fmt.Errorf("%w (a job of a scheduler's jobs file is edited in that file)", err)
		case errors.Is(err, scheduler.ErrInvalidJob):
			return errorf(http.StatusConflict, "invalid", "job "+name+" cannot be read to edit it: "+err.Error()+": store it again (shepherd ctl job add) or delete it")
		case err != nil:
			return err
		}
		d.Title = "Edit job " + name
		d.Data = newJobForm(j, &version)
		return nil
	})
	s.page("GET /collectors", "collectors", func(r *http.Request, d *pageData) error {
		d.Title = "Collectors"
		return nil
	})
	s.page("GET /services", "services", func(r *http.Request, d *pageData) error {
		d.Title = "DNS names"
		d.Data = d.Snap.Errors[cluster.SectionServices] // why the section is empty, if it is
		return nil
	})
	s.page("GET /coord", "coord", func(r *http.Request, d *pageData) error {
		d.Title = "Coordination servers"
		d.Data = s.deps.Session.State().String()
		return nil
	})
	s.page("GET /users", "users", func(r *http.Request, d *pageData) error {
		if !d.Role.Allows(auth.Admin) {
			return errorf(http.StatusForbidden, "forbidden", "the users page needs the admin role")
		}
		d.Title = "Users and tokens"
		a, err := s.readAccounts(r.Context())
		d.Data = a
		return err
	})
	s.page("GET /znodes", "znodes", func(r *http.Request, d *pageData) error {
		if !d.Role.Allows(auth.Admin) {
			return errorf(http.StatusForbidden, "forbidden", "the znode browser needs the admin role")
		}
		v, err := s.readZnode(r)
		d.Title, d.Data = "Znode "+v.Path, v
		return err
	})
	s.page("GET /alerts", "alerts", func(r *http.Request, d *pageData) error {
		d.Title = "Alerts"
		return nil
	})
	s.page("GET /audit", "audit", func(r *http.Request, d *pageData) error {
		stream := r.URL.Query().Get("stream")
		log, err := s.readStream(d.Role, stream)
		if err != nil {
			return err
		}
		d.Title = "Audit log"
		if stream == streamSecurity {
			d.Title = "Security events"
		}
		entries, err := log.List(r.Context(), 200, "")
		if err != nil {
			return err
		}
		d.Data = auditPage{Security: stream == streamSecurity, Rows: auditRows(entries)}
		return nil
	})
}

// jobsPage is the data of the jobs page: the jobs list and the run grid,
// both from the snapshot's summary the event stream sends.
type jobsPage struct {
	Jobs   []liveJob
	States []string // the grid's legend
}

// gridStates are the states a run grid cell is coloured by.
var gridStates = []string{string(scheduler.Succeeded), string(scheduler.Failed), string(scheduler.TimedOut), string(scheduler.Skipped),
	string(scheduler.Missed), string(scheduler.Replaced), string(scheduler.Abandoned), string(scheduler.Blocked), "waiting", "running", "pending"}

// jobForm is the data of the job form: the job to edit (none for a new
// one) with its environment values hidden, and the text of its
// multi-line fields.
type jobForm struct {
	Job     scheduler.Job
	Version *int32 // of the stored node; nil for a new job
	Args    string // one a line
	Env     string // NAME=value a line, values RedactedValue
	After   string // upstream jobs and freshness gates, one a line (scheduler.ParseDependency)
	// NodeSelector is key=value a line.
	NodeSelector string
	// Headers are an HTTP job's headers, "Name: value" a line (values
	// RedactedValue); Success its success statuses, space-separated.
	Headers, Success string
	// Methods are the HTTP methods an HTTP job may use.
	Methods []string
}

func newJobForm(j scheduler.Job, version *int32) jobForm {
	j = j.Redacted()
	env := make([]string, 0, len(j.Env))
	for k, v := range j.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	after := make([]string, len(j.After))
	for i, d := range j.After {
		after[i] = d.String()
	}
	sel := make([]string, 0, len(j.NodeSelector))
	for k, v := range j.NodeSelector {
		sel = append(sel, k+"="+v)
	}
	slices.Sort(sel)
	f := jobForm{Job: j, Version: version, Args: strings.Join(j.Args, "\n"), Env: strings.Join(env, "\n"), After: strings.Join(after, "\n"),
		NodeSelector: strings.Join(sel, "\n"), Methods: []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}}
	if j.HTTP != nil {
		hs := make([]string, 0, len(j.HTTP.Headers))
		for k, v := range j.HTTP.Headers {
			hs = append(hs, k+": "+v)
		}
		slices.Sort(hs)
		f.Headers = strings.Join(hs, "\n")
		st := make([]string, len(j.HTTP.SuccessStatus))
		for i, c := range j.HTTP.SuccessStatus {
			st[i] = strconv.Itoa(c)
		}
		f.Success = strings.Join(st, " ")
	}
	return f
}

// auditPage is the data of the audit page: a stream's newest entries.
type auditPage struct {
	Security bool
	Rows     []auditRow
}

type auditRow struct {
	audit.Entry
	BeforeJSON, AfterJSON string
}

func auditRows(es []audit.Entry) []auditRow {
	out := make([]auditRow, len(es))
	for i, e := range es {
		out[i] = auditRow{Entry: e, BeforeJSON: compactJSON(e.Before), AfterJSON: compactJSON(e.After)}
	}
	return out
}

func compactJSON(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
