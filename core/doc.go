// Package core is the replication worker behind `shepherd core`: it
// decides which process runs each MySQL replication task, from where, and
// what happens when processes, connections or servers fail. The copying
// itself is an Engine's (package replication for MySQL and MariaDB).
//
// # Nodes it owns
//
// core owns /mysql_replicator (Layout): it is the only package that
// decodes those nodes. Readers — ctl, the console, the monitor through
// package cluster — get TaskStatus from Admin, specs redacted with
// Spec.Redacted before they are shown.
//
// # Tasks and instances
//
// A task is a Spec stored as JSON in /mysql_replicator/tasks/<task>
// (Layout). Every core configured for a task is an instance of it: an
// EPHEMERAL_SEQUENTIAL node <host>-<seq> whose data is the instance's
// state (InstanceState). Instances queue in a coord/recipe Election named
// that way; the first in line owns the task.
//
//   - Hot standby (Config.Tasks): every instance waits in line, each
//     watching only its predecessor, and takes over as soon as the owner's
//     node goes (its session ended) or the owner hands over on shutdown.
//   - Cold standby (Config.Group): cores scan the group's tasks every scan
//     interval and try (Election.TryCampaign) to take each task whose
//     instances directory is empty; a core that is not first withdraws.
//     The cores of a group keep its tasks evenly spread (balance.go): each
//     registers an ephemeral member node cores/<group>/<host> (Layout.Cores)
//     and, from one picture of members and owners, takes unowned tasks
//     while below its fair share and hands its surplus over — the clean
//     stop of a shutdown — at a bounded rate, with hysteresis on members
//     coming and going and optional pinning (standby.preferredCores).
//
// # Checkpoints and fencing
//
// The owner's replicator commits a checkpoint to the target with every
// transaction; the owner mirrors it to tasks/<task>/lastCommit every
// CheckpointInterval and when it stops. A new owner resumes from the later
// of the two. Each term of ownership has an epoch, the creation zxid of
// the owner's instance node, which grows with every takeover. lastCommit
// writes are a multi checking that the writer's node still exists, with
// an expected version, after checking that the stored epoch is not larger;
// target commits are conditioned on the stored epoch by the replicator. A
// stale owner — one whose session expired while it was paused or cut off
// — can therefore write neither.
//
// When the connection to the coordination server is lost (Suspended) the
// owner stops applying until it is back; when the session is lost it
// stops and queues again as a standby.
//
// # Failures
//
// Retryable failures (a server unreachable) are retried with backoff by
// the owner, its state showing the error and the next attempt. A
// non-retryable one (ErrNonRetryable: a statement the target refuses, a
// source not set up for row-based binlogs) makes the owner FAILED; it
// keeps the task, so that no other instance repeats the failure, and the
// failure is counted in lastCommit so that instances taking over after a
// crash give up after Config.MaxFailures attempts. Changing the spec
// (shepherd ctl task start) clears it.
//
// # Concurrency
//
// Each task has one goroutine running its election loop and, while it
// owns the task, one running the replicator and one reporting progress.
// A term's mutex (term.mu) and a publisher's are each taken alone and
// never held while calling out, except that the publisher holds its own
// while writing the instance node, so that writes do not reorder.
package core
