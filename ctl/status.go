package ctl

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/core"
)

// snapshot reads the sections of the cluster opts asks for, through the
// run's session: the same read model the console and the monitor use.
// A section that could not be read is an error, unless opts asks for
// every section (status shows what it could read, then fails).
func (r *runner) snapshot(opts cluster.Options) (*cluster.Snapshot, error) {
	s, err := r.session()
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	snap, err := cluster.NewReader(s, opts).Read(ctx)
	if err != nil && snap == nil {
		return nil, err
	}
	if len(opts.Sections) == 0 {
		return snap, nil
	}
	for _, sec := range opts.Sections {
		if why, ok := snap.Errors[sec]; ok {
			return nil, fmt.Errorf("%s: %s", sec, why)
		}
	}
	return snap, nil
}

// statusCommand is `ctl status`: the whole cluster at a glance.
func (r *runner) statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "the whole cluster at a glance: coordination servers, tasks, jobs, collectors and sources",
		Description: `status reads the cluster snapshot that the console and the monitor read too
(package cluster): each coordination server of --zk (srvr, and mntr where allowed),
the replication tasks, the scheduler jobs and running schedulers, the log
collectors and sources. With --json it prints that snapshot. A part that could not
be read is reported and makes the exit status 1; the other parts are still shown.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Value: core.DefaultRoot, EnvVars: []string{"SHEPHERD_REPLICATION_ROOT"},
				Usage: "root of the replication nodes (below the --zk chroot)"},
			&cli.DurationFlag{Name: "dead-after", Usage: "judge collectors with this instead of the leading assigner's --dead-after"},
		},
		Action: r.status,
	}
}

func (r *runner) status(c *cli.Context) error {
	if _, err := argsN(c, 0, 0); err != nil {
		return err
	}
	servers, err := coordhealth.Servers(r.connect)
	if err != nil {
		return fmt.Errorf("--zk %q: want host:port[,host:port…][/chroot]", r.connect)
	}
	root := c.String("root")
	if err := checkPath(root, false); err != nil || root == "/" {
		return usagef("status: --root %q: want an absolute path below /", root)
	}
	if d := c.Duration("dead-after"); c.IsSet("dead-after") && d <= 0 {
		return usagef("status: --dead-after %v: must be positive", d)
	}
	snap, err := r.snapshot(cluster.Options{CoreRoot: root, CoordServers: servers, DeadAfter: c.Duration("dead-after")})
	if err != nil {
		return err
	}
	if r.json {
		if err := writeJSON(r.env.Stdout, snap); err != nil {
			return err
		}
	} else if err := writeStatus(r.env.Stdout, snap, time.Now()); err != nil {
		return err
	}
	if len(snap.Errors) > 0 {
		return &exitError{code: ExitFailure, msg: "status: some parts could not be read: " + snap.ErrorsText()}
	}
	return nil
}

// writeStatus prints the snapshot, one titled table per section.
func writeStatus(w io.Writer, snap *cluster.Snapshot, now time.Time) error {
	section := func(sec cluster.Section, title string, write func()) {
		fmt.Fprintf(w, "%s:\n", title)
		if why, ok := snap.Errors[sec]; ok {
			fmt.Fprintf(w, "  UNREADABLE: %s\n\n", oneLine(why))
			return
		}
		write()
		fmt.Fprintln(w)
	}
	section(cluster.SectionCoord, "coordination servers", func() { writeServers(w, snap.Coord) })
	section(cluster.SectionTasks, fmt.Sprintf("tasks (%d)", len(snap.Tasks)), func() { writeTaskList(w, snap) })
	section(cluster.SectionJobs, fmt.Sprintf("jobs (%d, %d schedulers running)", len(snap.Jobs), len(snap.Schedulers)), func() { _ = writeJobList(w, snap.Jobs) })
	alive := 0
	for _, c := range snap.Collectors {
		if c.Alive {
			alive++
		}
	}
	section(cluster.SectionCollectors, fmt.Sprintf("collectors (%d of %d alive)", alive, len(snap.Collectors)), func() { _ = writeCollectors(w, snap.Collectors) })
	section(cluster.SectionCollectors, fmt.Sprintf("sources (%d)", len(snap.Sources)), func() { writeSources(w, snap.Sources) })
	unserved := 0
	for _, sv := range snap.Services {
		if sv.Served == 0 {
			unserved++
		}
	}
	section(cluster.SectionServices, fmt.Sprintf("DNS names (%d, %d with no served address)", len(snap.Services), unserved), func() { _ = writeServices(w, snap.Services) })
	fmt.Fprintf(w, "read at %s\n", snap.ReadAt.Format(time.RFC3339))
	return nil
}

func writeServers(w io.Writer, servers []coordhealth.Server) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tMODE\tVERSION\tLATENCY MIN/AVG/MAX\tOUTSTANDING\tZNODES\tCONNECTIONS")
	for _, s := range servers {
		if !s.OK {
			fmt.Fprintf(tw, "%s\tDOWN\t-\t-\t-\t-\t-\t-\t%s\n", s.Addr, oneLine(s.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\tok\t%s\t%s\t%g/%g/%g ms\t%d\t%d\t%d\n", s.Addr, s.Mode, s.Version,
			s.Latency.Min, s.Latency.Avg, s.Latency.Max, s.Outstanding, s.Znodes, s.Connections)
	}
	tw.Flush()
}

func writeSources(w io.Writer, sources []collector.SourceStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tCOLLECTOR\tLAG\tLINES")
	for _, s := range sources {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", s.URI, cmp.Or(s.Collector, "unassigned"), s.Lag, s.Lines)
	}
	tw.Flush()
}
