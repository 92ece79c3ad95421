package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// jobCommand is `ctl job …`: the administration of `shepherd scheduler`
// jobs. The logic is package scheduler's (StoreJob, Trigger, …); this
// parses words and prints.
func (r *runner) jobCommand() *cli.Command {
	subs := []*cli.Command{
		{
			Name:      "add",
			Usage:     "store a job (or every job of a jobs file) in /scheduler/jobs",
			ArgsUsage: "[--file jobs.yaml] | [--schedule cron] [flags] name -- command [args…] | [--schedule cron] --http-url URL [flags] name",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "file", Usage: "YAML jobs file: store each of its jobs"},
				&cli.StringFlag{Name: "schedule", Usage: "cron expression: 5 or 6 fields, @daily, @every 1h, CRON_TZ=…"},
				&cli.StringFlag{Name: "time-zone", Usage: "IANA zone of the schedule and run keys (default UTC)"},
				&cli.StringFlag{Name: "dir", Usage: "working directory of the command"},
				&cli.StringSliceFlag{Name: "env", Usage: "NAME=value added to the command's environment (repeatable)"},
				&cli.DurationFlag{Name: "timeout", Usage: "bound on one attempt; the process group is killed after it"},
				&cli.IntFlag{Name: "retries", Usage: "retries of a failed attempt"},
				&cli.DurationFlag{Name: "retry-backoff", Usage: "wait before the first retry, doubled after (default 10s)"},
				&cli.StringFlag{Name: "concurrency-policy", Usage: "allow, forbid or replace (default allow)"},
				&cli.DurationFlag{Name: "starting-deadline", Usage: "how late a missed run may still start (0: missed runs are only recorded)"},
				&cli.IntFlag{Name: "history-limit", Usage: "finished runs kept (default 10)"},
				&cli.StringSliceFlag{Name: "after", Usage: "a job whose run of the same run key this job's run waits for, or task:TASK[@scheduled+D], a replication task whose target must hold what its source committed up to the scheduled time (+D) (repeatable)"},
				&cli.StringFlag{Name: "when-upstream", Usage: "how the upstream runs must have ended: succeeded, failed or any (default succeeded)"},
				&cli.IntFlag{Name: "shards", Usage: "split each run into this many items, spread over the schedulers (SHEPHERD_SHARD, SHEPHERD_SHARDS)"},
				&cli.StringSliceFlag{Name: "node-selector", Usage: "key=value a scheduler's --labels must have to fire the job (repeatable; all must match)"},
				&cli.StringFlag{Name: "routing", Usage: "which of those schedulers runs a run: any (default) or spread (the runs go round them)"},
				&cli.StringFlag{Name: "http-url", Usage: "call this URL instead of running a command (the schedulers' --http-allow must list its host)"},
				&cli.StringFlag{Name: "http-method", Usage: "method of --http-url: GET (default), POST, PUT, PATCH, DELETE, HEAD"},
				&cli.StringSliceFlag{Name: "http-header", Usage: "'Name: value' header of the request (repeatable; values are shown as ***)"},
				&cli.StringFlag{Name: "http-body", Usage: "body of the request"},
				&cli.IntSliceFlag{Name: "http-success", Usage: "response status that means success (repeatable; default any 2xx)"},
			},
			Action: r.jobAdd,
		},
		{
			Name: "graph", Usage: "the jobs' dependencies (after), upstream jobs first",
			Action: r.jobGraph,
		},
		{Name: "list", Usage: "every job a scheduler fires (stored, or in a running scheduler's --jobs file) with its latest run", Action: r.jobList},
		{Name: "show", Usage: "a job's spec and runs", ArgsUsage: "job", Action: r.jobShow},
		{
			Name: "run-now", Usage: "run a job now, once, on one scheduler", ArgsUsage: "[--wait duration] [--run-key key] [--param NAME=value]… job",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "wait", Usage: "wait this long for the result and print it (exit 1 unless it succeeded)"},
				&cli.StringFlag{Name: "run-key", Usage: "run this run key (a date or a scheduled time: a backfill), after its upstream runs of that key; default a manual-… key of its own"},
				&cli.StringSliceFlag{Name: "param", Usage: "NAME=value passed to the run as $SHEPHERD_PARAM_NAME and recorded in its result (repeatable)"},
			},
			Action: r.jobRunNow,
		},
		{Name: "pause", Usage: "stop firing a job on every scheduler", ArgsUsage: "job", Action: r.jobPause(true)},
		{Name: "resume", Usage: "fire a paused job again (missed runs are caught up per its starting deadline)", ArgsUsage: "job", Action: r.jobPause(false)},
		{Name: "rm", Usage: "delete a stored job (its run history stays)", ArgsUsage: "job", Action: r.jobRemove},
		{
			Name: "logs", Usage: "the output of a run (default: the latest)", ArgsUsage: "job [run-key]",
			Action: r.jobLogs,
		},
	}
	return &cli.Command{
		Name:        "job",
		Usage:       "manage scheduler jobs: add, list, show, graph, run-now, pause, resume, rm, logs",
		ArgsUsage:   "verb [args…]",
		Description: "Jobs of `shepherd scheduler`, stored in /scheduler/jobs. See docs/scheduler.md.",
		Subcommands: subs,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("job: unknown verb %q: want add, list, show, graph, run-now, pause, resume, rm or logs", c.Args().First())
			}
			return usagef("job: missing verb: want add, list, show, graph, run-now, pause, resume, rm or logs")
		},
	}
}

// jobError words a scheduler error for the command line.
func jobError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, scheduler.ErrInvalidJob) || errors.Is(err, scheduler.ErrNoSuchJob) || errors.Is(err, scheduler.ErrRunDone) || errors.Is(err, scheduler.ErrInvalidParams) {
		return errors.New(strings.TrimPrefix(err.Error(), "scheduler: "))
	}
	return err
}

func (r *runner) jobAdd(c *cli.Context) error {
	var jobs []scheduler.Job
	if path := c.String("file"); path != "" {
		if c.NArg() > 0 {
			return usagef("job add: --file takes no name or command")
		}
		data, err := r.readInput("job add", path, boundedfile.MaxConfig)
		if err != nil {
			return err
		}
		if jobs, err = scheduler.ParseJobs(data); err != nil {
			return fmt.Errorf("job add: %s: %w", path, jobError(err))
		}
	} else {
		args := c.Args().Slice()
		if len(args) > 1 && args[1] == "--" {
			args = append(args[:1], args[2:]...)
		}
		var hr *scheduler.HTTPRequest
		if u := c.String("http-url"); u != "" {
			if len(args) != 1 {
				return usagef("job add: --http-url takes a name and no command")
			}
			hr = &scheduler.HTTPRequest{URL: u, Method: c.String("http-method"), Body: c.String("http-body"), SuccessStatus: c.IntSlice("http-success")}
			for _, kv := range c.StringSlice("http-header") {
				k, v, ok := strings.Cut(kv, ":")
				if !ok {
					return usagef("job add: --http-header %q: want 'Name: value'", kv)
				}
				if hr.Headers == nil {
					hr.Headers = map[string]string{}
				}
				hr.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			args = append(args, "")
		}
		if len(args) < 2 {
			return usagef("job add: want a name and a command, or --http-url (usage: %s)", c.Command.UsageText)
		}
		j := scheduler.Job{
			Name: args[0], Schedule: c.String("schedule"), TimeZone: c.String("time-zone"),
			Command: args[1], Args: args[2:], Dir: c.String("dir"), HTTP: hr,
			Timeout: scheduler.Duration(c.Duration("timeout")), Retries: c.Int("retries"),
			RetryBackoff:      scheduler.Duration(c.Duration("retry-backoff")),
			ConcurrencyPolicy: scheduler.Policy(c.String("concurrency-policy")),
			StartingDeadline:  scheduler.Duration(c.Duration("starting-deadline")),
			HistoryLimit:      c.Int("history-limit"),
			WhenUpstream:      scheduler.Condition(c.String("when-upstream")),
			Shards:            c.Int("shards"),
			Routing:           scheduler.Routing(c.String("routing")),
		}
		for _, kv := range c.StringSlice("node-selector") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usagef("job add: --node-selector %q: want key=value", kv)
			}
			if j.NodeSelector == nil {
				j.NodeSelector = map[string]string{}
			}
			j.NodeSelector[k] = v
		}
		for _, up := range c.StringSlice("after") {
			d, err := scheduler.ParseDependency(up)
			if err != nil {
				return usagef("job add: %v", jobError(err))
			}
			j.After = append(j.After, d)
		}
		for _, kv := range c.StringSlice("env") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usagef("job add: --env %q: want NAME=value", kv)
			}
			if j.Env == nil {
				j.Env = map[string]string{}
			}
			j.Env[k] = v
		}
		if err := j.Validate(); err != nil {
			return usagef("job add: %v", jobError(err))
		}
		jobs = []scheduler.Job{j}
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	r.warnUnsecured(s, "schedulers refuse the job")
	// A dependency cycle with the jobs the schedulers have is refused
	// before anything is stored.
	ctx, cancel := r.opCtx()
	err = scheduler.NewAdmin(s).CheckGraph(ctx, jobs...)
	cancel()
	if errors.Is(err, scheduler.ErrInvalidJob) && c.String("file") == "" {
		return usagef("job add: %v", jobError(err))
	}
	if err != nil {
		return fmt.Errorf("job add: %w", jobError(err))
	}
	for _, j := range jobs {
		ctx, cancel := r.opCtx()
		err := r.storeJob(ctx, scheduler.NewAdmin(s), j)
		cancel()
		if err != nil {
			return fmt.Errorf("job add %s: %w", j.Name, jobError(err))
		}
		if !r.json {
			fmt.Fprintf(r.env.Stdout, "stored %s\n", scheduler.JobPath(j.Name))
		}
	}
	if r.json {
		names := make([]string, len(jobs))
		for i, j := range jobs {
			names[i] = j.Name
		}
		return writeJSON(r.env.Stdout, map[string]any{"stored": names})
	}
	return nil
}

// storeJob stores j, audited as the console audits it: job.create, or
// job.update with the job it replaces; environment values hidden.
func (r *runner) storeJob(ctx context.Context, a *scheduler.Admin, j scheduler.Job) error {
	action := "job.create"
	var before any
	old, _, err := a.JobVersion(ctx, j.Name)
	switch {
	case err == nil:
		action, before = "job.update", old.Redacted()
	case errors.Is(err, scheduler.ErrInvalidJob):
		action = "job.update"
	case !errors.Is(err, scheduler.ErrNoSuchJob):
		return err
	}
	err = a.StoreJob(ctx, j)
	r.record(action, "job/"+j.Name, before, j.Redacted(), err)
	return err
}

func (r *runner) jobList(c *cli.Context) error {
	if _, err := argsN(c, 0, 0); err != nil {
		return err
	}
	snap, err := r.snapshot(cluster.Options{Sections: []cluster.Section{cluster.SectionJobs}})
	if err != nil {
		return err
	}
	for _, j := range snap.Jobs {
		if j.Differs && !j.Stored {
			r.warn("job %s: the jobs files of %s define it differently; each scheduler fires its own definition", j.Name, strings.Join(j.FileHosts, ", "))
		}
		if err := r.warnUntrusted(r.sess, scheduler.Root, scheduler.JobPath(j.Name)); err != nil {
			return err
		}
	}
	if r.json {
		return writeJSON(r.env.Stdout, snap.Jobs)
	}
	return writeJobList(r.env.Stdout, snap.Jobs)
}

// writeJobList prints one line per job.
func writeJobList(w io.Writer, jobs []scheduler.JobStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tSOURCE\tPAUSED\tLAST RUN\tSTATUS\tRUNNING")
	for _, j := range jobs {
		last, status := "-", "-"
		if res := j.Last(); res != nil {
			last, status = res.RunKey, string(res.Status)
		}
		if j.Error != "" {
			status = "refused: " + j.Error
		}
		running := j.Running()
		for i, key := range running {
			if ri := j.Run(key); ri != nil && ri.Waiting != nil {
				running[i] = key + " (waiting)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", j.Name, j.Job.Schedule, j.Source(), j.Paused, last, status, strings.Join(running, ","))
	}
	return tw.Flush()
}

func (r *runner) jobShow(c *cli.Context) error {
	args, s, err := r.argsSession(c, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	js, err := scheduler.NewAdmin(s).Job(ctx, args[0], 0)
	if err != nil {
		return jobError(err)
	}
	if js.Error != "" && len(js.FileHosts) == 0 {
		return errors.New(js.Error)
	}
	if r.json {
		return writeJSON(r.env.Stdout, js)
	}
	w := r.env.Stdout
	switch {
	case len(js.FileHosts) > 0:
		fmt.Fprintf(w, "%s\n", js.Job.Encode())
		fmt.Fprintf(w, "from the jobs file of %s (environment values are not published)\n", strings.Join(js.FileHosts, ", "))
		if js.Stored {
			r.warn("job %s: the stored job of this name in %s is refused by these schedulers: their jobs file wins", args[0], scheduler.JobsPath)
		}
		if js.Differs {
			r.warn("job %s: the jobs files of %s define it differently; each scheduler fires its own definition", args[0], strings.Join(js.FileHosts, ", "))
		}
	case js.Stored:
		fmt.Fprintf(w, "%s\n", js.Job.Encode())
	default:
		fmt.Fprintf(w, "%s is not stored in %s and no running scheduler has it in its jobs file\n", args[0], scheduler.JobsPath)
	}
	fmt.Fprintf(w, "paused: %v\n", js.Paused)
	switch {
	case len(js.FiredBy) > 0:
		fmt.Fprintf(w, "fired by: %s\n", strings.Join(js.FiredBy, ", "))
	case len(js.Job.NodeSelector) > 0:
		r.warn("job %s: no running scheduler has labels matching its nodeSelector %v; nothing runs it", js.Name, js.Job.NodeSelector)
	}
	if len(js.Next) > 0 {
		next := make([]string, len(js.Next))
		for i, t := range js.Next {
			next[i] = t.In(r.env.Location).Format(time.DateTime)
		}
		fmt.Fprintf(w, "next: %s\n", strings.Join(next, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN KEY\tSTATUS\tATTEMPT\tHOST\tSTART\tDURATION\tERROR")
	for _, ri := range slices.Backward(js.Runs) { // oldest first, as logs read
		if ri.Result == nil {
			switch {
			case ri.Waiting != nil:
				fmt.Fprintf(tw, "%s\twaiting\t\t%s\t\t\t%s\n", ri.RunKey, ri.Waiting.Host, waitingFor(ri.Waiting, r.env.Location))
			default:
				fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t%s\n", ri.RunKey, map[bool]string{true: "running", false: "pending"}[ri.Running], itemsDone(ri.Items))
			}
			writeItems(tw, ri.Items, r.env.Location)
			continue
		}
		res := ri.Result
		start, dur := "-", "-"
		if !res.Start.IsZero() {
			start = res.Start.In(r.env.Location).Format(time.DateTime)
			dur = res.End.Sub(res.Start).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", ri.RunKey, res.Status, res.Attempt, res.Host, start, dur, res.Error)
		writeItems(tw, res.Items, r.env.Location)
	}
	return tw.Flush()
}

// itemsDone words the progress of a sharded run's items.
func itemsDone(items []scheduler.ItemSummary) string {
	if len(items) == 0 {
		return ""
	}
	n := 0
	for _, it := range items {
		if it.Status != "" {
			n++
		}
	}
	return fmt.Sprintf("%d of %d items ended", n, len(items))
}

// writeItems prints the items of a sharded run under it, one a line.
func writeItems(tw io.Writer, items []scheduler.ItemSummary, loc *time.Location) {
	for _, it := range items {
		status, start, dur := string(it.Status), "-", "-"
		if status == "" {
			status = map[bool]string{true: "running", false: "pending"}[it.Running]
		}
		if !it.Start.IsZero() {
			start = it.Start.In(loc).Format(time.DateTime)
			if !it.End.IsZero() {
				dur = it.End.Sub(it.Start).Round(time.Millisecond).String()
			}
		}
		fmt.Fprintf(tw, "  item %d\t%s\t%d\t%s\t%s\t%s\t%s\n", it.Item, status, it.Attempt, it.Host, start, dur, it.Error)
	}
}

// waitingFor words what a waiting run waits for.
func waitingFor(w *scheduler.Waiting, loc *time.Location) string {
	return fmt.Sprintf("%s (missed after %s)", w.For, w.Until.In(loc).Format(time.DateTime))
}

// jobGraph prints the jobs' dependency graph: one line per job, upstream
// jobs first, with the jobs it waits for.
func (r *runner) jobGraph(c *cli.Context) error {
	_, s, err := r.argsSession(c, 0, 0)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	g, err := scheduler.NewAdmin(s).Graph(ctx)
	if err != nil {
		return jobError(err)
	}
	for _, cy := range g.Cycles {
		r.warn("dependency cycle %s: its runs wait until their starting deadline; schedulers refuse the stored jobs on it", strings.Join(cy, " → "))
	}
	if r.json {
		return writeJSON(r.env.Stdout, g)
	}
	return writeJobGraph(r.env.Stdout, g)
}

// writeJobGraph prints a Graph as text: each job indented by its level,
// then what it waits for.
func writeJobGraph(w io.Writer, g scheduler.Graph) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tAFTER\tWHEN\tDOWNSTREAM")
	for _, j := range g.Jobs {
		name := strings.Repeat("  ", max(j.Level, 0)) + j.Name
		if j.Level < 0 {
			name = j.Name + " (cycle)"
		}
		after := make([]string, 0, len(j.After))
		for _, u := range j.After {
			if slices.Contains(j.Unknown, u) {
				u += " (no such job)"
			}
			after = append(after, u)
		}
		after = append(after, j.Gates...)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, dash(strings.Join(after, ", ")), dash(string(j.WhenUpstream)), dash(strings.Join(j.Downstream, ", ")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *runner) jobRunNow(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	if wait < 0 {
		return usagef("job run-now: --wait %v: must not be negative", wait)
	}
	var params map[string]string
	for _, kv := range c.StringSlice("param") {
		k, v, err := scheduler.ParseParam(kv)
		if _, dup := params[k]; err == nil && dup {
			err = fmt.Errorf("param %s given twice", k)
		}
		if err != nil {
			return usagef("job run-now: %v", jobError(err))
		}
		if params == nil {
			params = map[string]string{}
		}
		params[k] = v
	}
	if err := scheduler.ValidateParams(params); err != nil {
		return usagef("job run-now: %v", jobError(err))
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	a := scheduler.NewAdmin(s)
	// Only a scheduler that knows the job answers its trigger: for one
	// nobody knows, a trigger would wait, forgotten, until a scheduler
	// with that name in its file starts (issue 25).
	js, err := a.Job(ctx, args[0], 1)
	if err == nil && !js.Stored && len(js.FileHosts) == 0 {
		err = scheduler.ErrNoSuchJob // only past runs are left of it
	}
	if errors.Is(err, scheduler.ErrNoSuchJob) {
		cancel()
		return fmt.Errorf("job run-now: no such job %q: it is not stored in %s and no running scheduler has it in its jobs file (shepherd ctl job list)", args[0], scheduler.JobsPath)
	}
	var key string
	if err == nil {
		key, err = a.TriggerRun(ctx, args[0], time.Now(), scheduler.RunRequest{RunKey: c.String("run-key"), Params: params})
		r.record("job.run", "job/"+args[0], nil, map[string]any{"runKey": key, "params": params}, err)
	}
	cancel()
	if errors.Is(err, scheduler.ErrInvalidJob) {
		return usagef("job run-now: %v", jobError(err))
	}
	if err != nil {
		return jobError(err)
	}
	if wait == 0 {
		if r.json {
			return writeJSON(r.env.Stdout, map[string]string{"runKey": key})
		}
		fmt.Fprintln(r.env.Stdout, key)
		return nil
	}
	wctx, wcancel := context.WithTimeout(r.ctx, wait)
	defer wcancel()
	for {
		res, ok, err := a.ReadResult(wctx, args[0], key)
		if err == nil && ok {
			if r.json {
				_ = writeJSON(r.env.Stdout, res)
			} else {
				fmt.Fprintf(r.env.Stdout, "%s %s attempt %d on %s (exit %d)\n", key, res.Status, res.Attempt, res.Host, res.ExitCode)
			}
			if res.Status != scheduler.Succeeded {
				return &exitError{code: ExitFailure, msg: fmt.Sprintf("run %s %s: %s", key, res.Status, res.Error)}
			}
			return nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			if r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			return fmt.Errorf("run %s of %s: no result within %v (is a scheduler with this job running?)", key, args[0], wait)
		}
	}
}

func (r *runner) jobPause(pause bool) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, s, err := r.argsSession(c, 1, 1)
		if err != nil {
			return err
		}
		ctx, cancel := r.opCtx()
		defer cancel()
		a := scheduler.NewAdmin(s)
		var before any
		if was, err := a.Paused(ctx, args[0]); err == nil {
			before = map[string]bool{"paused": was}
		}
		err = a.SetPaused(ctx, args[0], pause)
		action := map[bool]string{true: "job.pause", false: "job.resume"}[pause]
		r.record(action, "job/"+args[0], before, map[string]bool{"paused": pause}, err)
		return jobError(err)
	}
}

func (r *runner) jobRemove(c *cli.Context) error {
	args, s, err := r.argsSession(c, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	a := scheduler.NewAdmin(s)
	var before any
	if old, _, err := a.JobVersion(ctx, args[0]); err == nil {
		before = old.Redacted()
	}
	err = a.RemoveJob(ctx, args[0])
	r.record("job.delete", "job/"+args[0], before, nil, err)
	return jobError(err)
}

// jobLogs prints a run's log file when it is on this machine, and the
// output tail kept in its result otherwise.
func (r *runner) jobLogs(c *cli.Context) error {
	args, s, err := r.argsSession(c, 1, 2)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	a := scheduler.NewAdmin(s)
	var res *scheduler.Result
	if len(args) == 2 {
		got, ok, err := a.ReadResult(ctx, args[0], args[1])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("job %s run %s has no result (running, or no such run: see job show %s)", args[0], args[1], args[0])
		}
		res = &got
	} else {
		runs, err := a.Runs(ctx, args[0])
		if err != nil {
			return err
		}
		for _, ri := range runs {
			if ri.Result != nil {
				res = ri.Result
			}
		}
		if res == nil {
			return fmt.Errorf("job %s has no finished run", args[0])
		}
	}
	if len(res.Items) == 0 {
		return r.writeRunLog(*res, "run "+res.RunKey)
	}
	// A sharded run: each item ran on its own, with a log of its own.
	for _, it := range res.Items {
		fmt.Fprintf(r.env.Stdout, "=== item %d of %d: %s on %s, attempt %d\n", it.Item, len(res.Items), it.Status, it.Host, it.Attempt)
		ir, ok, err := a.ReadItemResult(ctx, args[0], res.RunKey, it.Item)
		switch {
		case err != nil:
			return err
		case !ok:
			r.warn("item %d of run %s has no result left to show", it.Item, res.RunKey)
			continue
		}
		if err := r.writeRunLog(ir, fmt.Sprintf("item %d of run %s", it.Item, res.RunKey)); err != nil {
			return err
		}
	}
	return nil
}

// writeRunLog prints a run's (or an item's, what names it) log file when
// this host has it, else the output tail kept in its result.
func (r *runner) writeRunLog(res scheduler.Result, what string) error {
	if res.LogFile != "" {
		data, err := boundedfile.Read(r.ctx, res.LogFile, boundedfile.MaxLog)
		switch {
		case err == nil:
			_, err = r.env.Stdout.Write(data)
			return err
		case errors.Is(err, boundedfile.ErrTooLarge):
			return fmt.Errorf("job logs: %w (read it on %s with tail or less)", err, res.Host)
		case r.ctx.Err() != nil:
			return err
		}
	}
	r.warn("log file %s of %s is on %s; showing the output tail kept in the result", res.LogFile, what, res.Host)
	_, err := fmt.Fprint(r.env.Stdout, res.Output)
	return err
}
