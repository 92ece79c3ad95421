// Package testpeer starts real peers — Apache ZooKeeper 3.8, kazoo, zkCli,
// MariaDB, nats-server with JetStream —
// from Go tests, so that suites can prove Shepherd against the software it
// claims to be compatible with.
//
// A peer that is not installed makes the calling test skip, unless the
// environment sets SHEPHERD_IT=1 (CI does), in which case it is a failure:
// a CI job that silently skipped every differential test would prove
// nothing. See Require.
//
// Peers run as child processes on loopback ports. Every process started
// here is stopped by PID when its test ends (SIGTERM, then SIGKILL), and on
// Linux the kernel kills it if the test binary dies first, so a crashed
// test run leaves no JVM behind.
//
// This package is for tests only; nothing outside _test.go files and test
// helpers may import it.
package testpeer
