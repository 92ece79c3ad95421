// Package ctl is `shepherd ctl`, the operator's command-line client: the
// verbs of ZooKeeper's zkCli.sh (ls, create, get, set, stat, delete,
// deleteall, getacl, setacl, sync) with the same output, plus verbs zkCli
// lacks — watch (stream events), lock and elect (run a command while
// holding a lock or leadership), dump and load (subtree export and import
// as JSON) and the four-letter words (srvr, mntr, ruok …).
//
// It talks to `shepherd coord` or to an Apache ZooKeeper ensemble through
// coord/recipe, and uses nothing only the bundled server has.
//
// ctl decodes none of Shepherd's own nodes: task, job, collector and
// status verbs read through the domain packages' Admins and the cluster
// snapshot (package cluster) and only format what those return, so that
// ctl, the console and the monitor show the same thing; with --json they
// print the same types.
//
// Every change a verb makes to what Shepherd's processes act on is
// recorded in the console's audit log (package server/audit), with the
// console's action names and Via "ctl", by one helper (runner.record); a
// failed record is a warning and never changes the verb's outcome.
//
// Run is the whole program: it takes the words after "shepherd ctl" and an
// Env (the standard streams, the signals to forward, a clock zone) and
// returns the exit status, so every verb is testable in-process.
// cmd/shepherd only wires os.Stdout and friends to it.
//
// # Output and exit status
//
// Plain output matches zkCli.sh's where a user would compare the two
// (children as [a, b], the stat block, getAcl's 'scheme,'id lines, error
// texts such as "Node does not exist: /x"). With --json every command
// prints one JSON document (watch: one per event). Errors are one line on
// stderr. Exit status: 0 success, 1 failure, 2 usage error; lock and elect
// pass the command's status through, or exit 75 when the lock or the
// leadership was lost while the command ran. docs/ctl.md is the manual.
package ctl
