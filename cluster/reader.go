package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// ErrUnreadable is Read's error when no section at all could be read.
var ErrUnreadable = errors.New("cluster: nothing could be read")

// Reader reads a snapshot now.
type Reader interface {
	// Read returns the cluster as it is now. A section that fails is
	// in the snapshot's Errors; the error is only for a snapshot of
	// which nothing at all could be read (ErrUnreadable, returned with
	// that snapshot), or for ctx's end (no snapshot).
	Read(ctx context.Context) (*Snapshot, error)
}

// Options says what NewReader reads.
type Options struct {
	CoreRoot string // "" = core.DefaultRoot
	// CoordServers are the host:port of each coordination server (from
	// the connect string: coordhealth.Servers). None: Coord is empty.
	CoordServers []string
	// DeadAfter overrides the leading assigner's collector liveness
	// bound; 0 = the assigner's, or collector.DefaultDeadAfter.
	DeadAfter time.Duration
	// RunsPerJob is the history kept per job in JobStatus.Runs; 0 =
	// scheduler.DefaultRunsPerJob.
	RunsPerJob int
	// Sections are the sections Read reads; none = all. A section left
	// out is empty, without an error: `ctl job list` reads jobs alone.
	Sections []Section
}

// reads reports whether the options ask for section sec.
func (o *Options) reads(sec Section) bool {
	return len(o.Sections) == 0 || slices.Contains(o.Sections, sec)
}

// SessionReader reads the cluster through a session, with the session's
// credential: what it may not read is a section's error, not a hole.
type SessionReader struct {
	s       *recipe.Session
	opts    Options
	tasks   *core.Admin
	jobs    *scheduler.Admin
	logs    *collector.Admin
	names   *dns.Admin
	watches *watchSet
}

// NewReader returns a Reader (and Watcher) of the cluster through s.
func NewReader(s *recipe.Session, opts Options) Reader {
	r := &SessionReader{s: s, opts: opts, tasks: core.NewAdmin(s, opts.CoreRoot),
		jobs: scheduler.NewAdmin(s), logs: collector.NewAdmin(s), names: dns.NewAdmin(s)}
	r.watches = newWatchSet(s, []string{r.tasks.Layout().Tasks(), scheduler.JobsPath, scheduler.PausedPath,
		scheduler.SchedulersPath, collector.CollectorsPath, collector.SourcesPath})
	return r
}

// Read reads every section asked for (Options.Sections); the
// coordination servers are probed while the tree is read.
func (r *SessionReader) Read(ctx context.Context) (*Snapshot, error) {
	snap := empty(time.Now())
	errs := map[Section]string{}
	servers := r.opts.CoordServers
	if !r.opts.reads(SectionCoord) {
		servers = nil
	}
	coord := make(chan []coordhealth.Server, 1)
	go func() { coord <- coordhealth.ProbeAll(ctx, servers) }()
	read := 0 // sections asked for; the servers are one
	if len(servers) > 0 {
		read = 1
	}
	for _, sec := range []Section{SectionTasks, SectionJobs, SectionCollectors, SectionServices} {
		if !r.opts.reads(sec) {
			continue
		}
		read++
		if err := r.readSection(ctx, sec, snap); err != nil {
			errs[sec] = err.Error()
		}
	}
	snap.Coord = <-coord
	if why := coordError(snap.Coord); why != "" {
		errs[SectionCoord] = why
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(errs) == 0 {
		return snap, nil
	}
	snap.Errors = errs
	if len(errs) == read {
		return snap, fmt.Errorf("%w: %s", ErrUnreadable, errorsText(errs))
	}
	return snap, nil
}

// readSection fills one section of snap; it is left empty on error.
func (r *SessionReader) readSection(ctx context.Context, sec Section, snap *Snapshot) error {
	switch sec {
	case SectionTasks:
		tasks, err := r.tasks.Tasks(ctx)
		if err != nil {
			return err
		}
		for i := range tasks {
			if tasks[i].Spec != nil {
				tasks[i].Spec = tasks[i].Spec.Redacted()
			}
		}
		snap.Tasks = tasks
		snap.SourceSamples = SourceSamples(ctx, r.s)
	case SectionJobs:
		jobs, scheds, err := r.jobs.Jobs(ctx, r.opts.RunsPerJob)
		if err != nil {
			return err
		}
		snap.Jobs, snap.Schedulers = jobs, scheds
	case SectionCollectors:
		ov, err := r.logs.Overview(ctx, r.opts.DeadAfter)
		if err != nil {
			return err
		}
		snap.Collectors, snap.Sources, snap.CollectorsJudged = ov.Collectors, ov.Sources, ov.Judged
	case SectionServices:
		services, err := r.names.Services(ctx)
		if err != nil {
			return err
		}
		snap.Services = services
	}
	return nil
}

// The active monitor's state node, whose history holds its samples of
// every task's source position (package monitor writes it).
const (
	MonitorRoot      = "/shepherd/monitor"
	MonitorStatePath = MonitorRoot + "/state"
)

// SourceSamples reads the monitor's samples of each task's source, by
// task: what ViewTask measures lag against. None when no monitor has
// written them, or when a session without s's identity could have (a
// forged lag would hide a late task).
func SourceSamples(ctx context.Context, s *recipe.Session) map[string][]PosSample {
	data, _, err := s.Retrying().Get(ctx, MonitorStatePath)
	if err != nil || s.CheckTrusted(ctx, MonitorRoot, MonitorStatePath) != nil {
		return nil
	}
	var st struct {
		History struct {
			Tasks map[string]struct {
				Samples []PosSample `json:"samples"`
			} `json:"tasks"`
		} `json:"history"`
	}
	if json.Unmarshal(data, &st) != nil {
		return nil
	}
	out := make(map[string][]PosSample, len(st.History.Tasks))
	for name, th := range st.History.Tasks {
		out[name] = th.Samples
	}
	return out
}

// errorsText is the sections' errors in one line, in the order ctl
// status shows the sections.
func errorsText(errs map[Section]string) string {
	var out []string
	for _, sec := range []Section{SectionCoord, SectionTasks, SectionJobs, SectionCollectors, SectionServices} {
		if why, ok := errs[sec]; ok {
			out = append(out, string(sec)+": "+why)
		}
	}
	return strings.Join(out, "; ")
}

// coordError is the coord section's error: set when no server answered.
func coordError(servers []coordhealth.Server) string {
	var why []string
	for _, s := range servers {
		if s.OK {
			return ""
		}
		why = append(why, s.Error)
	}
	if len(why) == 0 {
		return ""
	}
	return "no coordination server answered srvr: " + strings.Join(why, "; ")
}

// Watch arms a watch on each root the snapshot reads that has none
// armed, and returns the channel that receives when one fires.
func (r *SessionReader) Watch(ctx context.Context) (<-chan struct{}, error) {
	return r.watches.arm(ctx)
}
