// Package compat holds differential tests: every scenario runs against
// Apache ZooKeeper 3.8 and against shepherd's bundled server (package
// coord), and the two normalised transcripts must be identical. It has no
// code outside its tests.
//
// A scenario is written once, against the script type, which opens
// sessions (go-zookeeper, the client Shepherd uses, or a raw-protocol
// client for what go-zookeeper cannot send) and writes one transcript
// line per request, reply and notification:
//
//	S1 create /t-multi/a "a" persistent -> ok | /t-multi/a
//	S2 multi [check /t-multi/c v=5, delete /t-multi/c v=-1] -> ok | [error BadVersion …]
//	S2 event NodeDataChanged /t-watches-wire/x
//
// Zxids are replaced by their rank (Z1, Z2, … in numeric order, so
// equality and order are compared, gaps are not), session ids by their
// order of appearance (S1, S2, …), times by T; see transcript for the
// rules and the reasons.
//
// # Running
//
//	go test ./coord/compat                          # both servers
//	go test ./coord/compat -targets=zookeeper       # ZooKeeper only
//	go test ./coord/compat -targets=shepherd        # shepherd only
//	SHEPHERD_COMPAT_TARGETS=shepherd go test ./coord/compat
//
// One ZooKeeper (started with testpeer, TTL nodes enabled) and one
// shepherd server serve the whole test binary; each scenario works below
// its own /t-<name> and removes it afterwards, so scenarios run in
// parallel.
//
// ZooKeeper's transcripts are kept in testdata/<scenario>.golden. With
// both servers, shepherd is compared with the live ZooKeeper run and
// ZooKeeper with its golden file; with shepherd alone (no java on the
// machine), shepherd is compared with the golden files, so the
// differential check still runs. After a deliberate change of scenario,
// rewrite the golden files from ZooKeeper:
//
//	go test ./coord/compat -targets=zookeeper -update
//
// Without java the ZooKeeper half is skipped, or fails when SHEPHERD_IT=1
// (see internal/testpeer).
package compat
