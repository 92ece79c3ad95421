// Package scheduler is Shepherd's distributed cron: every scheduler
// process fires the same jobs on the same cron schedules, and for each
// scheduled time (a run, named by its run key) exactly one of them — the
// one that creates /master_election/<job>/<run-key>/binding, an
// ephemeral node — executes the job. The others watch; if the master's
// session ends before it has written .../result, they elect again and the
// run is retried, its attempt counted in .../attempts. A run with a
// result is never executed again.
//
// The exactly-once argument, in short:
//
//   - The binding create is the election: ZooKeeper lets one session
//     create a node, and deletes it when that session ends.
//   - The master reads result after winning (a master that lost its
//     session may have published one just before), and publishes its own
//     result in a multi that checks the version of .../attempts it set
//     when it started its attempt: every new master bumps that version
//     before running, so a master whose session ended and whose run
//     was taken over cannot publish.
//   - A run whose result exists is done: every path checks result first.
//
// A job may wait for other jobs (Job.After): the master of its run waits,
// before its first attempt, for the runs of the same run key of those
// jobs, then runs or records the run Blocked (decideUpstream). The wait
// changes nothing in the fencing below, which starts with the attempt.
//
// A sharded job's run (Job.Shards) is coordinated by its master; its
// items are units of their own, elected, fenced and published exactly
// as runs are (shard.go), by the schedulers working on the run.
//
// A job's nodeSelector limits it to the schedulers whose labels match
// (selectJobs); routing spread holds back the election of a scheduler
// that ran one of the latest runs (awaitTurn), which orders the election
// and changes nothing else.
//
// A job runs a command, a registered Go function or an HTTP request
// (http.go), the last only to a host on the scheduler's --http-allow
// list, empty by default.
//
// Jobs come from a YAML file (ParseJobs) and/or from
// /scheduler/jobs/<job> (JSON). /scheduler/paused/<job> pauses a job and
// /scheduler/triggers/<job>@<run-key> asks for a run now; both work for
// jobs of either origin. docs/scheduler.md describes the guarantees,
// configuration and failure behaviour.
//
// scheduler owns /scheduler and /master_election and is the only package
// that decodes them: Admin is the administration every reader uses (ctl,
// the console, the monitor through package cluster), and JobStatus what
// they show. A stored job is decoded by one function (decodeStoredJob)
// for the scheduler and for Admin alike; a job whose stored name is not
// its node's name is refused by both.
//
// The package uses only coord/recipe's Session over go-zookeeper, so it
// runs against `shepherd coord` and Apache ZooKeeper alike.
//
// # Concurrency
//
// Scheduler.mu guards the job table, in-flight runs and subscribers; it
// is never held while calling the coordination server or a job. The
// mutex of one run's work (its workers list) is never held with it.
package scheduler
