package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// AssignerState is the data of AssignerPath, written by the leading
// assigner at every round. Its mtime is the coordination server's clock
// at that round: liveness is judged on that clock, never on a local one
// against the server's, so that `ctl collector list` judges as the
// assigner does.
type AssignerState struct {
	Version   int           `json:"version"`
	Leader    string        `json:"leader"`
	DeadAfter time.Duration `json:"dead_after_ns"`
	Time      time.Time     `json:"time"` // the assigner's clock, for people
}

// Liveness is the verdict on one collector.
type Liveness struct {
	Alive bool
	// Age is how long before the reference time its status was last
	// written, on the server's clock; -1 if it has no status.
	Age    time.Duration
	Reason string // the verdict in words
}

// stamp is what the rule reads of one collector's status node.
type stamp struct {
	exists  bool
	mtime   int64 // the node's mtime: server clock, ms
	leaving bool
}

// judge is the one liveness rule, used by the assigner and by
// Admin.Overview alike: a collector is alive if it has a status, that
// status is not its last (Leaving), and it was written less than
// deadAfter before now; now and the status's mtime are both the
// coordination server's clock (ms). now is the time of the assigner's
// round, written before any status is read: a status written since is
// fresh (age 0). Taking the newest status as now instead would make the
// statuses read first in a slow round look older than they are.
func judge(s stamp, now int64, deadAfter time.Duration) Liveness {
	if !s.exists {
		return Liveness{Age: -1, Reason: "no status"}
	}
	age := max(time.Duration(now-s.mtime)*time.Millisecond, 0)
	switch {
	case s.leaving:
		return Liveness{Age: age, Reason: "stopped: its sources are handed back"}
	case age >= deadAfter:
		return Liveness{Age: age, Reason: fmt.Sprintf("status unchanged for %v (dead after %v)", age, deadAfter)}
	}
	return Liveness{Alive: true, Age: age, Reason: fmt.Sprintf("status written %v ago", age)}
}

// collectorNode is one collector as read from its two nodes. Decode
// errors are kept for the caller to judge: the assigner overwrites a
// malformed assignment, ctl reports it.
type collectorNode struct {
	name      string
	assign    Assignment
	assignErr error
	version   int32 // of the assignment node
	status    Status
	statusErr error
	stamp     stamp
}

// readCollectors reads the assignment and status of each collector in
// names; collectors deleted meanwhile are left out.
func readCollectors(ctx context.Context, s *recipe.Session, names []string) ([]collectorNode, error) {
	out := make([]collectorNode, 0, len(names))
	for _, n := range names {
		data, stat, err := s.Get(ctx, CollectorPath(n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		cn := collectorNode{name: n, version: stat.Version}
		cn.assignErr = decode(CollectorPath(n), data, &cn.assign)
		sdata, sstat, err := s.Get(ctx, StatusPath(n))
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return nil, err
		default:
			cn.statusErr = decode(StatusPath(n), sdata, &cn.status)
			cn.stamp = stamp{exists: true, mtime: sstat.Mtime, leaving: cn.status.Leaving}
		}
		out = append(out, cn)
	}
	return out, nil
}

// membersOf is the assigner's view of nodes, judged at ref.
func membersOf(nodes []collectorNode, ref int64, deadAfter time.Duration) []Member {
	out := make([]Member, 0, len(nodes))
	for _, n := range nodes {
		m := Member{Name: n.name, Assigned: n.assign.URIs(), Alive: judge(n.stamp, ref, deadAfter).Alive}
		if n.statusErr == nil {
			m.Load = n.status.Load
		}
		out = append(out, m)
	}
	return out
}

// infosOf is Admin.Overview's view of nodes, judged at ref.
func infosOf(nodes []collectorNode, ref int64, deadAfter time.Duration) ([]CollectorInfo, error) {
	out := make([]CollectorInfo, 0, len(nodes))
	for _, n := range nodes {
		if n.assignErr != nil {
			return nil, n.assignErr
		}
		if n.statusErr != nil {
			return nil, n.statusErr
		}
		v := judge(n.stamp, ref, deadAfter)
		info := CollectorInfo{Name: n.name, Sources: n.assign.URIs(), Alive: v.Alive, StatusAge: v.Age, Reason: v.Reason,
			Leaving: n.status.Leaving, Load: n.status.Load, Refused: n.status.Refused}
		for _, p := range n.status.Progress {
			if p.Owned {
				info.Lag += max(p.Lag, 0)
				info.Lines += p.Lines
			}
		}
		out = append(out, info)
	}
	return out, nil
}
