package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrNotCandidate: a switch of source to a server that is not one of the
// task's source candidates.
var ErrNotCandidate = errors.New("core: not a source candidate of the task")

// SourceSwitchRequest is what Admin.SwitchSource asked for.
type SourceSwitchRequest struct {
	Task string `json:"task"`
	// From is the candidate the task reads from now; To the one asked for.
	From string `json:"from"`
	To   string `json:"to"`
	// Running: the task's desired state is running, so its owner serves
	// the request now; otherwise when the task is started.
	Running bool `json:"running"`
}

// SwitchSource asks the owner of task name to read from the source
// candidate to (host:port, the primary or one of source.hosts) by the
// same resume rule as an automatic failover: by GTID, only if to holds
// every transaction the target's checkpoint applied. It writes the
// task's switchSource request, which the owner serves and deletes; a
// stopped task reads from to once started. by names who asked, for the
// record in lastCommit.
func (a *Admin) SwitchSource(ctx context.Context, name, to, by string) (SourceSwitchRequest, error) {
	res := SourceSwitchRequest{Task: name}
	host, port, err := net.SplitHostPort(strings.TrimSpace(to))
	if err != nil {
		return res, fmt.Errorf("%w: --to %q: want host:port", ErrInvalidSpec, to)
	}
	to = net.JoinHostPort(host, port)
	res.To = to
	ts, err := a.Task(ctx, name)
	if err != nil {
		return res, err
	}
	if ts.Spec == nil {
		return res, fmt.Errorf("%w: task %q: %s", ErrInvalidSpec, name, ts.SpecError)
	}
	sp := ts.Spec
	var lc LastCommit
	if ts.LastCommit != nil {
		lc = *ts.LastCommit
	}
	res.From, res.Running = sp.ActiveSource(lc).Addr(), sp.State == DesiredRunning
	if _, ok := sp.Source.Candidate(to); !ok {
		var all []string
		for _, e := range sp.Source.Candidates() {
			all = append(all, e.Addr())
		}
		return res, fmt.Errorf("%w: %s: task %q reads from one of %s; add %s to source.hosts first (shepherd ctl task add --replace)",
			ErrNotCandidate, to, name, strings.Join(all, ", "), to)
	}
	data := mustJSON(SwitchRequest{To: to, By: by, Time: time.Now().UTC()})
	p := a.layout.SwitchSource(name)
	err = a.retry(ctx, func() error {
		_, err := a.s.Create(ctx, p, data, zk.FlagPersistent, a.s.NodeACL())
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = a.s.Set(ctx, p, data, -1) // the latest request wins
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("core: task %q: write %s: %w", name, p, err)
	}
	return res, nil
}

// SourceSwitched reports whether task ts reads from to and no switch
// request is pending: what a caller of SwitchSource waits for.
func (a *Admin) SourceSwitched(ctx context.Context, ts *TaskStatus, to string) (bool, error) {
	if ts.Spec == nil || ts.LastCommit == nil || ts.LastCommit.Source != to {
		return false, nil
	}
	var pending bool
	err := a.retry(ctx, func() (err error) {
		pending, _, err = a.s.Retrying().Exists(ctx, a.layout.SwitchSource(ts.Name))
		return err
	})
	return !pending, err
}
