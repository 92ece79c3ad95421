package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// The functions below are the administration of jobs — what `shepherd
// ctl job` does — over any Session.

// StoreJob validates j and writes it to /scheduler/jobs/<name>, replacing
// a stored job of that name. Every scheduler picks it up.
func StoreJob(ctx context.Context, s *recipe.Session, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	data := j.Encode()
	return s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, JobsPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, JobPath(j.Name), data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.Set(ctx, JobPath(j.Name), data, -1)
		}
		return err
	})
}

// StoredJobs returns the jobs stored in /scheduler/jobs by name; a stored
// job that does not decode is returned in bad with its error.
func StoredJobs(ctx context.Context, s *recipe.Session) (jobs []Job, bad map[string]error, err error) {
	var names []string
	names, _, err = s.Retrying().Children(ctx, JobsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(names)
	bad = map[string]error{}
	for _, n := range names {
		j, err := LoadJob(ctx, s, n)
		switch {
		case errors.Is(err, ErrNoSuchJob):
		case errors.Is(err, ErrInvalidJob):
			bad[n] = err
		case err != nil:
			return nil, nil, err
		default:
			jobs = append(jobs, j)
		}
	}
	return jobs, bad, nil
}

// LoadJob reads one stored job.
func LoadJob(ctx context.Context, s *recipe.Session, name string) (Job, error) {
	data, _, err := s.Retrying().Get(ctx, JobPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return Job{}, fmt.Errorf("%w: %q is not stored in %s", ErrNoSuchJob, name, JobsPath)
	}
	if err != nil {
		return Job{}, err
	}
	return DecodeJob(data)
}

// RemoveJob deletes a stored job and its paused flag; its run history
// stays until deleted with the runs.
func RemoveJob(ctx context.Context, s *recipe.Session, name string) error {
	err := s.Retry(ctx, func() error { return s.Delete(ctx, JobPath(name), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %q is not stored in %s", ErrNoSuchJob, name, JobsPath)
	}
	if err != nil {
		return err
	}
	return SetPaused(ctx, s, name, false)
}

// SetPaused pauses or resumes a job (stored or from a jobs file) on every
// scheduler. A paused job does not fire; when resumed, the runs it missed
// are caught up as after a downtime (StartingDeadline).
func SetPaused(ctx context.Context, s *recipe.Session, name string, paused bool) error {
	p := PausedPath + "/" + name
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: job name %q", ErrInvalidJob, name)
	}
	return s.Retry(ctx, func() error {
		if !paused {
			err := s.Delete(ctx, p, -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		}
		if err := s.EnsurePath(ctx, PausedPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, p, nil, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

// Paused reports whether a job is paused.
func Paused(ctx context.Context, s *recipe.Session, name string) (bool, error) {
	ok, _, err := s.Retrying().Exists(ctx, PausedPath+"/"+name)
	return ok, err
}

// Trigger asks the schedulers to run a job now, as a run of its own with
// key "manual-<UTC time>" (RunKeyLayout, e.g.
// manual-2026-11-25T13:01:27.405Z), and returns that key. It runs once,
// on one scheduler that knows the job, whether or not the job is paused.
func Trigger(ctx context.Context, s *recipe.Session, name string, now time.Time) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("%w: job name %q", ErrInvalidJob, name)
	}
	key := ManualPrefix + now.UTC().Format(RunKeyLayout)
	data := []byte(now.Format(time.RFC3339Nano))
	err := s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, TriggersPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, TriggersPath+"/"+name+"@"+key, data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // our own create, whose reply was lost
		}
		return err
	})
	return key, err
}

// Schedulers returns what the running schedulers publish (SchedulerInfo),
// sorted by host and pid. A node that does not decode is skipped: it is
// only informative.
func Schedulers(ctx context.Context, s *recipe.Session) ([]SchedulerInfo, error) {
	ms, err := recipe.Members(ctx, s, SchedulersPath)
	if err != nil {
		return nil, err
	}
	out := make([]SchedulerInfo, 0, len(ms))
	for _, m := range ms {
		var in SchedulerInfo
		if json.Unmarshal(m.Data, &in) == nil && in.Host != "" {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b SchedulerInfo) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return a.PID - b.PID
	})
	return out, nil
}

// JobEntry is one job some scheduler fires, as ListJobs finds it.
type JobEntry struct {
	// Job is the definition in effect: the stored one if there is one,
	// else that of the first scheduler (by host) whose file defines it,
	// with environment values redacted (RedactedEnv).
	Job Job
	// Stored: the job is in /scheduler/jobs, which wins over the jobs
	// files on every scheduler.
	Stored bool
	// FileHosts are the running schedulers whose jobs file defines the
	// job (overridden by the stored job when Stored).
	FileHosts []string
	// Differs: those file definitions are not all the same, so each
	// scheduler fires its own (unless Stored). Environment values are
	// not compared: they are not published.
	Differs bool
	// Err is why a stored job does not decode; Job then has only a name.
	Err error
}

// ListJobs returns every job a scheduler fires, by name: the stored jobs
// and the jobs of the files of the running schedulers. A file job is
// listed while at least one scheduler that has it in its file runs.
func ListJobs(ctx context.Context, s *recipe.Session) ([]JobEntry, error) {
	stored, bad, err := StoredJobs(ctx, s)
	if err != nil {
		return nil, err
	}
	scheds, err := Schedulers(ctx, s)
	if err != nil {
		return nil, err
	}
	byName := map[string]*JobEntry{}
	for _, j := range stored {
		byName[j.Name] = &JobEntry{Job: j, Stored: true}
	}
	for name, e := range bad {
		byName[name] = &JobEntry{Job: Job{Name: name}, Stored: true, Err: e}
	}
	first := map[string][]byte{} // the first file definition of each name
	for _, in := range scheds {
		for _, j := range in.FileJobs {
			e := byName[j.Name]
			if e == nil {
				e = &JobEntry{Job: j}
				byName[j.Name] = e
			}
			if !slices.Contains(e.FileHosts, in.Host) {
				e.FileHosts = append(e.FileHosts, in.Host)
			}
			enc := j.Encode()
			if f, ok := first[j.Name]; !ok {
				first[j.Name] = enc
				e.Job = j // a file job wins over a stored one of its name, which schedulers refuse
			} else if !bytes.Equal(f, enc) {
				e.Differs = true
			}
		}
	}
	out := make([]JobEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b JobEntry) int { return strings.Compare(a.Job.Name, b.Job.Name) })
	return out, nil
}
