// Package cluster is the one read model of a Shepherd cluster: a
// Snapshot of its tasks, jobs, schedulers, collectors, sources, DNS names
// and coordination servers, read at one time, that `shepherd ctl` (its list,
// show and status verbs, and --json), the console's HTTP API and the
// monitor's rules all see, so the three never disagree.
//
// It owns no znode and decodes none: every section comes from the Admin
// of the domain package that owns those nodes (core for
// /mysql_replicator, scheduler for /scheduler and /master_election,
// collector for /logs, dns for /DDNS) and from coord/coordhealth for the servers'
// health. It must never write to the tree: actions go through those
// Admins, as the matching ctl verb does.
//
// A Reader reads a snapshot now; a Poller is a Feed that keeps the
// newest one, re-reading on an interval and at once when a watch on the
// task, job, scheduler or collector roots fires; Fixed is a Reader and
// Feed serving a snapshot a test sets, for the tests of the console and
// the monitor.
//
// A process that serves the cluster reads it once per interval, and at
// once when something changes, for all its clients:
//
//	servers, _ := coordhealth.Servers(connect)
//	r := cluster.NewReader(session, cluster.Options{CoordServers: servers})
//	p := cluster.NewPoller(r, 5*time.Second, log)
//	go p.Run(ctx)                 // until ctx ends
//	snaps, cancel := p.Subscribe() // the newest at once, then each new one
//	defer cancel()
//
// # Concurrency
//
// A Snapshot is never changed once handed out: readers share it without
// locks. feed.mu guards the newest snapshot and the subscribers; it is
// never held while reading the cluster.
package cluster
