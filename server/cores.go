package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/shepherd-dev/shepherd/core"
)

// defaultGroup is the cold group a core serves unless told otherwise:
// the one `shepherd up` runs a core for.
const defaultGroup = "default"

// standbyCheck says whether a core would run a task of the standby
// chosen, for the task form's note beside its standby fields.
type standbyCheck struct {
	Mode  string `json:"mode"`
	Group string `json:"group,omitempty"`
	Task  string `json:"task,omitempty"`
	// OK: a live core serves it as chosen.
	OK bool `json:"ok"`
	// Note is what the form shows: who serves it, or what to start.
	Note string `json:"note"`
}

// coresReport is GET /api/v1/cores: the live cores, the form's default
// standby, and with ?mode= the check of a chosen standby.
type coresReport struct {
	// Groups are the live cores of each cold group that has one.
	Groups map[string][]string `json:"groups"`
	// Default is the standby a new task starts from: cold in group
	// "default" when a live core serves it, else hot.
	Default core.Standby  `json:"default"`
	Check   *standbyCheck `json:"check,omitempty"`
}

// defaultStandby is cold in the default group when a core serves it (as
// under `shepherd up`), else hot: a new task is then run by what exists.
func defaultStandby(groups map[string][]string) core.Standby {
	if len(groups[defaultGroup]) > 0 {
		return core.Standby{Mode: core.ModeCold, Group: defaultGroup}
	}
	return core.Standby{Mode: core.ModeHot}
}

// checkStandby says whether a live core serves a task of that standby.
// A hot-standby core registers under its task (--task), so one serves
// task only once the task exists; snap (may be nil) says whether it has
// an instance now.
func checkStandby(groups map[string][]string, snap *Snapshot, mode, group, task string) standbyCheck {
	c := standbyCheck{Mode: mode, Group: group, Task: task}
	switch mode {
	case core.ModeCold:
		switch hosts := groups[group]; {
		case group == "":
			c.Note = "a cold-standby task needs a group"
		case len(hosts) == 0:
			c.Note = "no core serves group " + group + ": start `shepherd core --group " + group + "`"
		default:
			c.OK, c.Note = true, "served by the live cores of group "+group+": "+strings.Join(hosts, ", ")
		}
	case core.ModeHot:
		name := task
		if name == "" {
			name = "<name>"
		}
		var n int
		if snap != nil && task != "" {
			if ts, ok := snap.Task(task); ok && ts.Spec != nil && ts.Spec.Standby.Mode == core.ModeHot {
				n = len(ts.Instances)
			}
		}
		if n > 0 {
			c.OK, c.Note = true, "served by the "+plural(n, "core")+" started with `--task "+task+"`"
		} else {
			c.Note = "a hot-standby task runs only on cores started for it: start `shepherd core --task " + name + "`"
		}
	default:
		c.Note = "standby mode " + mode + ": want hot or cold"
	}
	return c
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// readCores is the report of the live cores, checking the standby of
// mode, group and task when mode is not "".
func (s *Server) readCores(ctx context.Context, mode, group, task string) (coresReport, error) {
	groups, err := s.tasks.LiveCores(ctx)
	if err != nil {
		return coresReport{}, err
	}
	rep := coresReport{Groups: groups, Default: defaultStandby(groups)}
	if mode != "" {
		snap, _ := s.snapshot()
		c := checkStandby(groups, snap, mode, group, task)
		rep.Check = &c
	}
	return rep, nil
}

// apiCores answers GET /api/v1/cores[?mode=hot|cold&group=&task=].
func (s *Server) apiCores(w http.ResponseWriter, r *http.Request, p principal) error {
	q := r.URL.Query()
	rep, err := s.readCores(r.Context(), q.Get("mode"), q.Get("group"), q.Get("task"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
