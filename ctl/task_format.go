package ctl

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
)

// standbyText is "hot" or "cold in group g".
func standbyText(sp *core.Spec) string {
	if sp.Standby.Mode == core.ModeCold {
		return "cold, group " + sp.Standby.Group
	}
	return sp.Standby.Mode
}

// lagText renders an instance's lag, or "-" when it does not apply.
func lagText(st core.InstanceState) string {
	if st.State != core.StateRunning {
		return "-"
	}
	return cluster.HumanDuration(time.Duration(st.LagSeconds * float64(time.Second)))
}

// positionText renders a position, or "-".
func positionText(p core.Position) string {
	if p.IsZero() {
		return "-"
	}
	return p.String()
}

// serverPositionText renders a position with the source server it is of,
// when known: the name reset-position --to file:pos@server takes.
func serverPositionText(p core.Position) string {
	if p.Server == "" || p.File == "" {
		return positionText(p)
	}
	return positionText(p) + " of server " + p.Server
}

// ago renders how long before now t was, or "-" for no time.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// stateText is an instance's state, with the retry it waits for.
func stateText(st core.InstanceState, now time.Time) string {
	if st.State == core.StateRunning && st.RetryAt != nil {
		return fmt.Sprintf("RUNNING (retry in %v)", max(st.RetryAt.Sub(now), 0).Round(100*time.Millisecond))
	}
	if st.State == "" {
		return "?"
	}
	return st.State
}

// writeTaskList prints one line per task: its state and lag as every
// view derives them (cluster.ViewTask).
func writeTaskList(w io.Writer, snap *cluster.Snapshot) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTANDBY\tDESIRED\tOWNER\tSTATE\tPOSITION\tLAG\tINSTANCES")
	for _, ts := range snap.Tasks {
		standby, desired := "?", "?"
		if ts.Spec != nil {
			standby, desired = standbyText(ts.Spec), ts.Spec.State
		}
		v := snap.TaskView(ts)
		owner := v.Owner
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", ts.Name, standby, desired, owner, v.State, positionText(v.Position), v.LagText(), len(ts.Instances))
	}
	tw.Flush()
}

// writeTaskShow prints a task in detail.
func writeTaskShow(w io.Writer, ts *core.TaskStatus, v cluster.TaskView, now time.Time, loc *time.Location) {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s:\t%s\n", k, fmt.Sprintf(format, args...)) }
	line("task", "%s", ts.Name)
	if v.Error != "" {
		line("state", "%s: %s", v.State, v.Error)
	} else {
		line("state", "%s", v.State)
	}
	line("lag", "%s", v.LagText())
	if sn := v.Snapshot; sn != nil {
		line("snapshot", "%s", sn.Text())
		for _, t := range sn.Tables {
			state := "copying"
			switch {
			case t.Done:
				state = "done"
			case t.Rows == 0:
				state = "waiting"
			}
			fmt.Fprintf(tw, "\t  %s.%s: %d of ~%d rows, %s\n", t.DB, t.Table, t.Rows, t.Estimated, state)
		}
	}
	if sp := ts.Spec; sp != nil {
		line("desired", "%s", sp.State)
		line("standby", "%s", standbyText(sp))
		line("source", "%s", endpointText(sp.Source.Endpoint))
		if len(sp.Source.Hosts) > 0 {
			var last core.LastCommit
			if ts.LastCommit != nil {
				last = *ts.LastCommit
			}
			line("candidates", "%s (failover after %v)", strings.Join(sp.Source.Hosts, ", "), sp.Source.FailoverAfter.D())
			line("reading", "%s", sp.ActiveSource(last).Addr())
		}
		line("target", "%s", targetText(&sp.Target))
		line("start", "%s", sp.Start)
		if len(sp.Filter.Include)+len(sp.Filter.Exclude) > 0 {
			line("filter", "include %s; exclude %s", listText(sp.Filter.Include), listText(sp.Filter.Exclude))
		}
		for i, rt := range sp.Routes {
			k := ""
			if i == 0 {
				k = "routes"
			}
			fmt.Fprintf(tw, "%s\t%s -> %s\n", k+":", rt.From, rt.To)
		}
	} else {
		line("spec", "%s", ts.SpecError)
	}
	switch lc := ts.LastCommit; {
	case lc != nil:
		line("lastCommit", "%s at %s (%s) by %s, epoch %d",
			serverPositionText(lc.Position()), lc.Time.In(loc).Format(time.RFC3339), ago(lc.Time, now), lc.Owner, lc.Epoch)
		if sw := lc.Switch; sw != nil {
			line("source switch", "%s -> %s %s (%s, by %s)", sw.From, sw.To, ago(sw.Time, now), sw.Reason, sw.Owner)
		}
		if f := lc.Failure; f != nil {
			line("failure", "%s (%d attempts, last by %s %s)", f.Error, f.Attempts, f.Owner, ago(f.Time, now))
		}
	case ts.LastCommitError != "":
		line("lastCommit", "unreadable: %s", ts.LastCommitError)
	default:
		line("lastCommit", "none yet")
	}
	switch rep := ts.Verify; {
	case rep != nil:
		line("verify", "%s (%s, %d chunks at %s)", verifySummary(rep), ago(rep.Finished, now), rep.Chunks, positionText(rep.Position))
	case ts.VerifyError != "":
		line("verify", "unreadable: %s", ts.VerifyError)
	}
	tw.Flush()
	fmt.Fprintln(w, "instances:")
	writeInstances(w, ts.Instances, now)
	if len(ts.Stray) > 0 {
		fmt.Fprintln(w, "stray instances (hot-standby cores of a cold task: they run nothing):")
		writeInstances(w, ts.Stray, now)
	}
}

func writeInstances(w io.Writer, ins []core.Instance, now time.Time) {
	if len(ins) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tSTATE\tPOSITION\tLAG\tROWS/S\tSINCE\tERROR")
	for _, in := range ins {
		st := in.State
		if in.Raw != "" {
			fmt.Fprintf(tw, "  %s\t?\t-\t-\t-\t-\tunreadable state: %q\n", in.Name, in.Raw)
			continue
		}
		rate := "-"
		if st.State == core.StateRunning {
			rate = fmt.Sprintf("%.0f", st.RowsPerSecond)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, stateText(st, now), positionText(st.Position), lagText(st), rate, ago(st.Since, now), oneLine(st.Error))
	}
	tw.Flush()
}

// targetText is a target of either kind, without its password.
func targetText(t *core.TargetEndpoint) string {
	switch {
	case t.IsMySQL():
		return endpointText(t.Endpoint)
	case t.IsKafka():
		return t.KafkaText()
	}
	s := fmt.Sprintf("nats %s stream %s", t.URL, t.Stream)
	if t.SubjectPrefix != "" {
		s += ", subjects " + t.SubjectPrefix + ".>"
	}
	if t.DuplicateWindow != 0 {
		s += ", duplicate window " + t.DuplicateWindow.D().String()
	}
	if t.User != "" {
		s += ", user " + t.User
	}
	if t.PasswordFile != "" {
		s += ", password from " + t.PasswordFile
	}
	return s
}

func endpointText(e core.Endpoint) string {
	s := fmt.Sprintf("%s@%s:%d (%s)", e.User, e.Host, e.Port, e.Flavor)
	if e.PasswordFile != "" {
		s += ", password from " + e.PasswordFile
	}
	return s
}

func listText(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ", ")
}

// oneLine keeps an error on its table row.
func oneLine(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// writeGroupSpread prints one line per cold group with live cores: the
// tasks each core holds against its share, and what is moving.
func writeGroupSpread(w io.Writer, groups []core.GroupStatus) {
	for _, g := range groups {
		if len(g.Cores) == 0 {
			continue
		}
		cores := make([]string, len(g.Cores))
		for i, c := range g.Cores {
			cores[i] = fmt.Sprintf("%s %d/%d", c.Host, len(c.Tasks), c.Share)
		}
		fmt.Fprintf(w, "group %s: %s (tasks/share); %d moving, %d unowned\n", g.Name, strings.Join(cores, ", "), len(g.Moves), len(g.Unowned))
	}
}

// writeGroups prints the group view: each cold group's live cores with
// their tasks and share, the hand-overs in progress and unowned tasks.
func writeGroups(w io.Writer, groups []core.GroupStatus, now time.Time) {
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "group %s: %d tasks to run, %d live cores\n", g.Name, g.Tasks, len(g.Cores))
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  CORE\tCAPACITY\tSHARE\tTASKS\tOWNS")
		for _, c := range g.Cores {
			owns := listText(c.Tasks)
			if c.Error != "" {
				owns += " (member node: " + oneLine(c.Error) + ")"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", c.Host, c.Capacity, c.Share, len(c.Tasks), owns)
		}
		tw.Flush()
		for _, m := range g.Moves {
			to := m.To
			if to == "" {
				to = "any core"
			}
			fmt.Fprintf(w, "  moving: %s %s -> %s (%s, share %d, %s)\n", m.Task, m.From, to, m.Reason, m.Share, ago(m.Since, now))
		}
		if len(g.Unowned) > 0 {
			fmt.Fprintf(w, "  unowned: %s\n", listText(g.Unowned))
		}
		for _, name := range slices.Sorted(maps.Keys(g.Others)) {
			fmt.Fprintf(w, "  %s: owned by %s, not a live core of the group\n", name, g.Others[name])
		}
	}
}
