// Package monitor is `shepherd monitor`: it evaluates alert rules over the
// cluster snapshot (package cluster) plus what it reads itself — each
// task source's binary logs and their expiry — and sends firing and
// resolved notifications; and it serves cluster-wide Prometheus gauges.
//
// Any number of monitors may run; one is active (elected under
// /shepherd/monitor/election) and the others stand by. The active one
// keeps the alert state, the history the rules need and the outbox of
// notifications not yet delivered in /shepherd/monitor/state, written
// fenced by its election node, so that a monitor taking over neither
// re-sends nor drops what its predecessor decided.
//
// The pieces, each pure where it can be:
//   - rules.go: the rules, pure functions of an Input (snapshot, source
//     readings, history, time), tested over hand-built inputs;
//   - history.go: what rules that look at change over time remember;
//   - alerts.go: the alert state machine (pending, firing, resolved);
//   - notify*.go: the channels (webhook, Slack, e-mail, command);
//   - store.go: the state and silences in the coordination tree;
//   - series.go: each task's lag and rows/s series (package series, the
//     pure ring) in /shepherd/monitor/series/<task>, for the console's
//     plots;
//   - monitor.go: the active/standby loop; outage.go: what the last
//     active monitor does while the coordination service is unreachable;
//   - metrics.go: the Prometheus endpoint.
//
// What it must never do: take a notification channel (a URL, an SMTP
// server, a command) from the coordination tree — channels come only
// from the monitor's own config file and flags, so that nobody who can
// write a node can make it run a command or send data elsewhere; connect
// to a source named by a task node that fails Session.CheckTrusted; or
// write anything but its own subtree.
package monitor
