// Package collector is Shepherd's distributed log collection: collectors
// that tail log sources (local files following rotation and truncation,
// HTTP(S) URLs polled with Range requests) into per-source output files,
// and an assigner that divides the sources among live collectors.
//
// The znode layout, below the session's root:
//
//	/logs/sources              the sources to collect (Sources, JSON)
//	/logs/collector/<name>     persistent; data: the collector's assignment (Assignment)
//	/logs/collector/<name>/status  persistent; data: progress and load (Status)
//	/logs/assigner             election of the assigner
//
// collector owns /logs and is the only package that decodes it: Admin
// is the administration every reader uses (ctl, the console, the monitor
// through package cluster), Overview what they show. Liveness is decided
// by one rule (judge, liveness.go) for the assigner and every reader.
//
// Collector nodes are persistent so that an assignment survives its
// collector's death. Liveness is the freshness of status, which the
// assigner polls and never watches.
//
// # Exactly-once output
//
// Every source's lines are written exactly once to the union of all
// collectors' output files, through kills, restarts and reassignment.
// Each collector commits by writing its status node; output bytes not
// covered by a committed status do not count and are cut off on restart
// or when the source is taken away. The protocol of one round is:
//
//  1. read complete lines from the source past the committed position;
//  2. append them to the source's current output segment and fsync it;
//  3. commit: one multi that checks the version of the collector's own
//     node (its assignment) and sets status with the new position, the
//     segment and its size, and the source's commit sequence number.
//
// The assigner changes the old and the new owner of a source in one
// multi, so once a source is taken from a collector that collector can
// commit nothing more (step 3 fails on the version check). A new owner
// reads every collector's status and resumes from the entry with the
// highest sequence number, which is the last commit of any owner; it
// first commits a takeover entry (sequence + 1, empty new segment) before
// writing output. A collector that restarts, or that finds a source taken
// away, truncates the segment recorded in its status to the recorded size
// and deletes its newer segments of that source: what it wrote without
// committing is gone, and the next owner writes it again exactly once.
//
// Output written to stdout is printed after the commit, so it is at most
// once: a kill between commit and print loses those lines on stdout only.
//
// # Concurrency
//
// A Collector runs one loop goroutine that owns all source state; within
// a round it reads sources on up to eight goroutines, each touching only
// its own source's output, and waits for them before committing. An
// Assigner runs one loop goroutine per term. Collector.mu guards only the
// counters read by Stats and is never held while calling out.
package collector
