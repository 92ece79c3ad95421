// Package bench is a load generator for ZooKeeper-protocol servers and the
// harness that compares the bundled coordination server (`shepherd coord`)
// with Apache ZooKeeper 3.8 side by side.
//
// It speaks to servers only as a client would, through
// github.com/go-zookeeper/zk, so the same workload bodies run unchanged
// against either server. Servers under comparison run as separate
// processes (see Target): their CPU time and resident memory are read
// from /proc/<pid>, which is why this package is Linux-only in practice.
//
// Every workload is a closed loop bounded both in operations (Options.Ops)
// and in time (Options.Duration, and the caller's context); nothing here
// runs unbounded. Latency percentiles come from a reservoir sample of the
// recorded latencies, sorted, so that long runs keep a fixed memory cost.
//
// Harness is the comparison that cannot flatter either server: it runs
// each server confined to its own CPUs and the load from separate
// generator processes (ServeGenerator) on the others, warms every fresh
// server up unmeasured, reads the server's counters (CPU, context
// switches, read/write calls) and the machine's around the measured
// window only, reports medians of repeated runs, and marks a run NOT
// CLEAN when the generators saturated their CPUs or something else took
// the server's. The pure accounting is in window.go (Account, Window).
//
// The package never starts servers on its own initiative: Run loads the
// address it is given; only Harness starts and stops Targets.
package bench
