package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/internal/exitstatus"
)

// taskCommand is `ctl task …`: the replication tasks of `shepherd core`,
// managed through package core's Admin.
func (r *runner) taskCommand() *cli.Command {
	root := &cli.StringFlag{Name: "root", Value: core.DefaultRoot, EnvVars: []string{"SHEPHERD_REPLICATION_ROOT"},
		Usage: "root of the replication nodes (below the --zk chroot)"}
	subs := []*cli.Command{{
		Name:      "add",
		Usage:     "add tasks from YAML or JSON specs: a file of one or more, separated by ---, or a directory of them (docs/replication.md)",
		ArgsUsage: "[--replace] -f task.yaml|dir",
		Description: `Every spec is validated before any is stored: if one is invalid, or (without
--replace) names a task that exists, each fault is printed with its file and
document number and nothing is stored. A directory's .yaml, .yml and .json
files are read in name order; two specs may not name the same task.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "f", Usage: "a spec file (YAML documents separated by ---, or JSON), a directory of .yaml, .yml and .json spec files, or - for standard input"},
			&cli.BoolFlag{Name: "replace", Usage: "overwrite the spec of each existing task (its owner restarts with it)"},
			&cli.BoolFlag{Name: "snapshot", Usage: "start each task with a copy of its tables, then the binlog (start: snapshot)"},
		},
		Action: r.taskAdd,
	}, {
		Name:      "check",
		Usage:     "check specs without storing them: valid, and, from this host, both servers reachable with their accounts, the binary log fit, the grants, the start position and the tables the filter selects (the console's test connection)",
		ArgsUsage: "-f task.yaml|dir",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "f", Usage: "a spec file (YAML documents separated by ---, or JSON), a directory of spec files, or - for standard input"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "bound on the checks of each task"},
		},
		Action: r.taskCheck,
	}, {
		Name:   "list",
		Usage:  "list tasks with their owner, position and lag",
		Action: r.taskList,
	}, {
		Name:      "groups",
		Usage:     "show cold-standby groups: live cores, tasks per core against its share, moves in progress",
		ArgsUsage: "[group]",
		Action:    r.taskGroups,
	}, {
		Name:      "show",
		Usage:     "show a task: spec, lastCommit, instances (RUNNING, STANDBY …), lag",
		ArgsUsage: "task",
		Action:    r.taskShow,
	}, {
		Name:      "start",
		Usage:     "set a task's desired state to running; restarts a FAILED task",
		ArgsUsage: "task",
		Action:    r.taskSetState(core.DesiredRunning),
	}, {
		Name:      "stop",
		Usage:     "set a task's desired state to stopped: its owner pauses (cold: gives it up)",
		ArgsUsage: "task",
		Action:    r.taskSetState(core.DesiredStopped),
	}, {
		Name:      "rm",
		Usage:     "remove a task that no core stands by for",
		ArgsUsage: "task",
		Action:    r.taskRemove,
	}, {
		Name:      "reset-epoch",
		Usage:     "after a move to another coordination ensemble: set a stopped task's stored epochs to 0",
		ArgsUsage: "task",
		Action:    r.taskResetEpoch,
	}}
	subs = append(subs, r.taskActionCommands()...)
	return &cli.Command{
		Name:      "task",
		Usage:     "manage replication tasks: add, check, list, groups, show, start, stop, rm, reset-epoch, handover, reset-position, skip-event, switch-source, verify",
		ArgsUsage: "[--root path] add|check|list|groups|show|start|stop|rm|reset-epoch [args]",
		Description: `  add [--replace] -f spec       add tasks from YAML or JSON specs: a file of one or
                                more (--- separated), a directory of spec files,
                                or - for stdin; all validated before any is stored
  check -f spec                 check specs, storing nothing: valid, and from this
                                host the servers, grants, binary log, start
                                position and tables (exit 1 if a check fails)
  list                          tasks with their owner, state, position and lag
  groups [group]                cold groups: live cores, tasks per core and share, moves
  show <task>                   spec, lastCommit and instances (RUNNING, STANDBY …)
  start <task>                  desired state running; restarts a FAILED task
  stop <task>                   desired state stopped: the owner pauses (cold: gives it up)
  rm <task>                     remove a task no core stands by for
  reset-epoch <task>            set a stopped task's stored epochs (target checkpoint
                                and lastCommit) to 0, after moving it to another
                                coordination ensemble (docs/replication.md)
  handover <task>               the owner hands the task to the next instance in line
  reset-position --to f:p <task>  move a stopped task's lastCommit (not behind the
                                target's checkpoint), e.g. past an event that fails;
                                --to is file:pos, file:pos@server or a GTID set
  skip-event <task>             a stopped task that failed for good: move past the
                                source transaction its failure names
  switch-source --to h:p <task> read from another source candidate (source.hosts),
                                resuming by GTID (docs/replication.md#source-failover)
  verify [--tables db.t,…] [--repair] <task>
                                compare a running task's source and target chunk by
                                chunk; list the keys that differ (exit 1 if any);
                                --repair rewrites them (docs/replication.md#verify)

Replication tasks live under /mysql_replicator (--root, or SHEPHERD_REPLICATION_ROOT):
tasks/<task> holds the spec, tasks/<task>/instances the cores standing by for it
(cold-standby tasks: tasks-groups/<group>/<task>/instances, live cores of a group:
cores/<group>/<host>), tasks/<task>/lastCommit the checkpoint. See docs/replication.md.`,
		Flags:       []cli.Flag{root},
		Subcommands: subs,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("task: unknown verb %q: want add, check, list, groups, show, start, stop, rm or reset-epoch", c.Args().First())
			}
			return usagef("task: missing verb: add, check, list, groups, show, start, stop, rm or reset-epoch")
		},
	}
}

// admin returns the task admin over the run's session.
func (r *runner) admin(c *cli.Context) (*core.Admin, error) {
	s, err := r.session()
	if err != nil {
		return nil, err
	}
	root := c.String("root")
	if err := checkPath(root, false); err != nil || root == "/" {
		return nil, usagef("task: --root %q: want an absolute path below /", root)
	}
	return core.NewAdmin(s, root), nil
}

// oneTask returns the task name argument and the admin, for the verbs
// on one task.
func (r *runner) oneTask(c *cli.Context) (string, *core.Admin, error) {
	name, err := taskArg(c)
	if err != nil {
		return "", nil, err
	}
	a, err := r.admin(c)
	return name, a, err
}

// taskArg returns the task name argument.
func taskArg(c *cli.Context) (string, error) {
	args := c.Args().Slice()
	if len(args) != 1 {
		return "", usagef("task %s: want one task name (usage: %s)", c.Command.Name, c.Command.UsageText)
	}
	return args[0], nil
}

func (r *runner) taskAdd(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("task add: unexpected argument %q: give the spec with -f file (usage: %s)", c.Args().First(), c.Command.UsageText)
	}
	file := c.String("f")
	if file == "" {
		return usagef("task add: -f task.yaml is required (a file of one or more specs separated by ---, a directory of spec files, or - for standard input)")
	}
	specs, err := r.readSpecs("task add", "nothing stored", file)
	if err != nil {
		return err
	}
	if c.Bool("snapshot") {
		var bad []error
		for _, ns := range specs {
			ns.spec.Start = core.StartSnapshot
			if err := ns.spec.Validate(); err != nil {
				bad = append(bad, fmt.Errorf("%s: %w", ns.from, err))
			}
		}
		if len(bad) > 0 {
			return r.refuseAll(bad, "task add --snapshot: nothing stored")
		}
	}
	a, err := r.admin(c)
	if err != nil {
		return err
	}
	r.warnUnsecured(r.sess, "cores refuse the task")
	ctx, cancel := r.opCtx()
	defer cancel()
	replace := c.Bool("replace")
	if !replace && len(specs) > 1 {
		// Refuse the whole set before storing any of it.
		var exist []error
		for _, ns := range specs {
			if _, _, err := a.TaskVersion(ctx, ns.spec.Name); !errors.Is(err, core.ErrNoTask) {
				if err != nil && !errors.Is(err, core.ErrInvalidSpec) {
					return err
				}
				exist = append(exist, fmt.Errorf("%s: %w: %s", ns.from, core.ErrTaskExists, ns.spec.Name))
			}
		}
		if len(exist) > 0 {
			return r.refuseAll(exist, fmt.Sprintf("task add: nothing stored: %d of the %d tasks exist already (use --replace to change their specs)", len(exist), len(specs)))
		}
	}
	type added struct {
		Task string `json:"task"`
		Path string `json:"path"`
	}
	var out []added
	for i, ns := range specs {
		sp := ns.spec
		if err := r.addTask(ctx, a, sp, replace); err != nil {
			if i > 0 {
				return fmt.Errorf("%w (the %d tasks before it were stored)", err, i)
			}
			return err
		}
		out = append(out, added{sp.Name, a.Layout().Task(sp.Name)})
		if !r.json {
			fmt.Fprintf(r.env.Stdout, "task %s added at %s (%s standby, %s)\n", sp.Name, a.Layout().Task(sp.Name), standbyText(sp), sp.State)
		}
	}
	if r.json {
		if len(out) == 1 {
			return writeJSON(r.env.Stdout, out[0])
		}
		return writeJSON(r.env.Stdout, out)
	}
	return nil
}

// addTask stores sp, audited as the console audits it: task.create, or
// task.update with the spec it replaces.
func (r *runner) addTask(ctx context.Context, a *core.Admin, sp *core.Spec, replace bool) error {
	action := "task.create"
	var old *core.Spec
	if replace {
		var err error
		old, _, err = a.TaskVersion(ctx, sp.Name)
		if err != nil && !errors.Is(err, core.ErrNoTask) && !errors.Is(err, core.ErrInvalidSpec) {
			return err
		}
		if !errors.Is(err, core.ErrNoTask) {
			action = "task.update"
		}
	}
	err := a.AddTask(ctx, sp, replace)
	r.record(action, "task/"+sp.Name, redactedSpec(old), redactedSpec(sp), err)
	return err
}

// specFileExts are the files of a directory that task add -f reads.
var specFileExts = []string{".yaml", ".yml", ".json"}

// namedSpec is a spec read by task add, with where it was read from.
type namedSpec struct {
	spec *core.Spec
	from string // "file", or "file: document n" in a file of several
}

// taskCheck is `task check`: each spec read and validated as task add
// does, then dry-run from this host by the engine the cores run
// (core.DefaultEngine().DryRun). No session is needed: nothing is stored.
func (r *runner) taskCheck(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("task check: unexpected argument %q: give the spec with -f file", c.Args().First())
	}
	file := c.String("f")
	if file == "" {
		return usagef("task check: -f task.yaml is required (a file of one or more specs separated by ---, a directory of spec files, or - for standard input)")
	}
	specs, err := r.readSpecs("task check", "nothing checked", file)
	if err != nil {
		return err
	}
	type checked struct {
		Task   string            `json:"task"`
		From   string            `json:"from"`
		Report core.DryRunReport `json:"report"`
	}
	var out []checked
	failed := 0
	for _, ns := range specs {
		ctx, cancel := context.WithTimeout(context.Background(), c.Duration("timeout"))
		rep, err := core.DefaultEngine().DryRun(ctx, ns.spec)
		cancel()
		if err != nil {
			return fmt.Errorf("task check: %s: task %s: %w", ns.from, ns.spec.Name, err)
		}
		if !rep.OK {
			failed++
		}
		out = append(out, checked{ns.spec.Name, ns.from, rep})
		if !r.json {
			writeDryRun(r.env.Stdout, ns.spec.Name, rep)
		}
	}
	if r.json {
		if err := writeJSON(r.env.Stdout, out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("task check: %d of %d tasks could not run as specified", failed, len(specs))
	}
	return nil
}

// writeDryRun prints one task's dry run: a verdict line, then each check.
func writeDryRun(w io.Writer, task string, rep core.DryRunReport) {
	verdict := "ready"
	if !rep.OK {
		verdict = "NOT ready"
	}
	fmt.Fprintf(w, "task %s: %s (start %s; tables: %d)\n", task, verdict, rep.Start, len(rep.Tables)+rep.MoreTables)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ch := range rep.Checks {
		mark := "ok"
		if !ch.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, ch.Name, ch.Detail)
	}
	tw.Flush()
}

// readSpecs reads the specs of -f for verb ("task add"): one file (- for
// standard input) of one or more --- separated documents, or every .yaml,
// .yml and .json file of a directory, in name order. Every document must
// be a valid spec, and no two may name the same task; otherwise the error
// lists every one at fault, with its file and document number, and
// nothing ("nothing stored") says what that means for the verb.
func (r *runner) readSpecs(verb, nothing, file string) ([]namedSpec, error) {
	files := []string{file}
	if file != "-" {
		if fi, err := os.Stat(file); err == nil && fi.IsDir() {
			entries, err := os.ReadDir(file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", verb, err)
			}
			files = files[:0]
			for _, e := range entries {
				if e.Type().IsRegular() && slices.Contains(specFileExts, strings.ToLower(filepath.Ext(e.Name()))) {
					files = append(files, filepath.Join(file, e.Name()))
				}
			}
			if len(files) == 0 {
				return nil, usagef("%s: directory %s has no .yaml, .yml or .json file", verb, file)
			}
		}
	}
	var specs []namedSpec
	var bad []error
	first := map[string]string{} // task name -> where it was first read
	for _, f := range files {
		data, err := r.readInput(verb, f, boundedfile.MaxConfig)
		if err != nil {
			return nil, err
		}
		docs, err := core.ParseSpecs(data)
		if err != nil {
			bad = append(bad, fmt.Errorf("%s: %w", f, err))
			continue
		}
		for _, d := range docs {
			from := f
			if len(docs) > 1 {
				from = fmt.Sprintf("%s: document %d (line %d)", f, d.Index, d.Line)
			}
			if d.Err != nil {
				bad = append(bad, fmt.Errorf("%s: %w", from, d.Err))
				continue
			}
			if prev, dup := first[d.Spec.Name]; dup {
				bad = append(bad, fmt.Errorf("%s: %w: task %s is also in %s", from, core.ErrInvalidSpec, d.Spec.Name, prev))
				continue
			}
			first[d.Spec.Name] = from
			specs = append(specs, namedSpec{d.Spec, from})
		}
	}
	switch {
	case len(bad) == 1 && len(specs) == 0:
		return nil, bad[0]
	case len(bad) > 0:
		return nil, r.refuseAll(bad, fmt.Sprintf("%s: %s: %d of %d documents are invalid", verb, nothing, len(bad), len(bad)+len(specs)))
	}
	return specs, nil
}

// refuseAll reports why task add stores nothing: each of errs on a line
// of its own on stderr, then summary as the error (with --json, whose
// error is one document, all of them in it). The error wraps errs.
func (r *runner) refuseAll(errs []error, summary string) error {
	lines := make([]string, len(errs))
	for i, err := range errs {
		lines[i] = exitstatus.OneLine(err.Error())
	}
	joined := errors.Join(errs...)
	if r.json {
		return &wrapped{msg: summary + ": " + strings.Join(lines, "; "), err: joined}
	}
	for _, l := range lines {
		fmt.Fprintln(r.env.Stderr, l)
	}
	return &wrapped{msg: summary + " (each said above)", err: joined}
}

// wrapped is an error with its own message that wraps err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

func (r *runner) taskList(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("task list: unexpected argument %q", c.Args().First())
	}
	a, err := r.admin(c)
	if err != nil {
		return err
	}
	snap, err := r.snapshot(cluster.Options{CoreRoot: a.Layout().Root, Sections: []cluster.Section{cluster.SectionTasks}})
	if err != nil {
		return err
	}
	paths := make([]string, len(snap.Tasks))
	for i, ts := range snap.Tasks {
		paths[i] = a.Layout().Task(ts.Name)
	}
	if err := r.warnUntrusted(r.sess, a.Layout().Root, paths...); err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, snap.Tasks)
	}
	writeTaskList(r.env.Stdout, snap)
	ctx, cancel := r.opCtx()
	defer cancel()
	groups, err := a.Groups(ctx)
	if err != nil {
		return err
	}
	writeGroupSpread(r.env.Stdout, groups)
	return nil
}

func (r *runner) taskGroups(c *cli.Context) error {
	if c.Args().Len() > 1 {
		return usagef("task groups: want at most one group name (usage: %s)", c.Command.UsageText)
	}
	a, err := r.admin(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	var groups []core.GroupStatus
	if name := c.Args().First(); name != "" {
		g, err := a.Group(ctx, name)
		if err != nil {
			return err
		}
		groups = []core.GroupStatus{g}
	} else if groups, err = a.Groups(ctx); err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, groups)
	}
	writeGroups(r.env.Stdout, groups, time.Now())
	return nil
}

func (r *runner) taskShow(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	ts, err := a.Task(ctx, name)
	if err != nil {
		return err
	}
	if ts.Spec != nil {
		ts.Spec = ts.Spec.Redacted()
	}
	if r.json {
		return writeJSON(r.env.Stdout, ts)
	}
	now := time.Now()
	writeTaskShow(r.env.Stdout, &ts, cluster.ViewTask(ts, cluster.SourceSamples(ctx, r.sess)[name], now), now, r.env.Location)
	return nil
}

func (r *runner) taskSetState(state string) cli.ActionFunc {
	return func(c *cli.Context) error {
		name, a, err := r.oneTask(c)
		if err != nil {
			return err
		}
		ctx, cancel := r.opCtx()
		defer cancel()
		var before any
		if old, _, err := a.TaskVersion(ctx, name); err == nil {
			before = stateField(old.State)
		}
		action := map[string]string{core.DesiredRunning: "task.start", core.DesiredStopped: "task.stop"}[state]
		err = a.SetState(ctx, name, state)
		r.record(action, "task/"+name, before, stateField(state), err)
		if err != nil {
			return err
		}
		if r.json {
			return writeJSON(r.env.Stdout, struct {
				Task  string `json:"task"`
				State string `json:"state"`
			}{name, state})
		}
		fmt.Fprintf(r.env.Stdout, "task %s: desired state %s\n", name, state)
		return nil
	}
}

func (r *runner) taskRemove(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	old, _, _ := a.TaskVersion(ctx, name)
	err = a.RemoveTask(ctx, name)
	r.record("task.delete", "task/"+name, redactedSpec(old), nil, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, struct {
			Removed string `json:"removed"`
		}{name})
	}
	fmt.Fprintf(r.env.Stdout, "task %s removed\n", name)
	return nil
}

func (r *runner) taskResetEpoch(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	res, err := a.ResetEpoch(ctx, name, r.engine, r.logger())
	// The console has no reset-epoch: ctl's own action name.
	r.record("task.reset-epoch", "task/"+name, map[string]int64{"targetEpoch": res.TargetEpoch, "lastCommitEpoch": res.LastCommitEpoch},
		map[string]int64{"targetEpoch": 0, "lastCommitEpoch": min(res.LastCommitEpoch, 0)}, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, res)
	}
	lc := "no lastCommit"
	if res.LastCommitEpoch >= 0 {
		lc = fmt.Sprintf("lastCommit epoch %d → 0", res.LastCommitEpoch)
	}
	fmt.Fprintf(r.env.Stdout, "task %s: target checkpoint epoch %d → 0, %s; shepherd ctl task start %s to resume\n", name, res.TargetEpoch, lc, name)
	return nil
}
