// Package crashtest proves that `shepherd coord` keeps what it acknowledged.
//
// Its tests run the real binary, built once per test run, as a child process
// on a loopback port and crash it with SIGKILL while go-zookeeper clients
// write to it:
//
//   - TestCrashDurability records every acknowledged create, setData,
//     setACL, delete and multi with the stat the server returned, crashes
//     and restarts the server several times under load (some crashes
//     timed to interrupt a snapshot), stops it gracefully once, and after
//     every restart reads the tree back: each acknowledged write must be
//     there with the same data, ACL and stat, parents must have the right
//     children, cversion and pzxid, no acknowledged delete may be undone,
//     no multi may be half applied, zxids and session ids must never be
//     reused, sessions (and so their ephemerals) must survive, and the
//     ephemerals of a session seen closed must stay deleted. Writes whose
//     acknowledgement was lost may or may not be there; the first read
//     after the restart decides which, and from then on they are held to
//     the same standard.
//   - TestLinearizability records a history of concurrent gets, plain sets
//     and version-conditioned sets across crashes and graceful restarts and
//     checks it with porcupine against a versioned register.
//   - TestTornTail, TestCrashDuringRecovery, TestCorruptOlderSegment and
//     TestDamagedSnapshot damage the data directory the way a crash (or a
//     failing disk) would and check that recovery keeps every complete
//     acknowledged write, warns about what it discards or skips, can itself
//     be interrupted, and refuses to start, naming the file, when the damage
//     is not a torn tail.
//
// The crash and linearizability runs also run against Apache ZooKeeper 3.8,
// to show that what the checkers demand is ZooKeeper's behaviour.
//
// SIGKILL leaves the page cache intact, so these tests cannot catch a
// missing fsync; they catch writes acknowledged before they were written,
// recovery that loses or invents data, and broken repair of torn files.
// Failures log the seed that replays their random choices
// (-crashtest.seed) and keep the server logs with go test -artifacts.
//
// The package has no non-test code; this file only documents it. It reads
// the log segment format described in coord/wal but imports nothing from
// the server: it tests the binary as an operator runs it.
package crashtest
