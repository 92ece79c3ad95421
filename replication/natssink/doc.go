// Package natssink is the replication sink that publishes a task's row
// changes to a NATS JetStream stream, exactly once, as JSON events in a
// Debezium-style envelope (before, after, source, op, ts_ms).
//
// # Subjects and events
//
// A row change of source table db.t (after the task's routes) is
// published to <prefix>.<db>.<t>, a schema change (DDL) to
// <prefix>._schema; names are made subject tokens by SubjectToken. Each
// event carries its source position (file, pos of the transaction's
// start), GTID, the source server's identity, the commit time and its
// index in the transaction. Events are rendered from the row images and
// the table map alone (package changeevent, pure functions), so the
// source must log column names: binlog_row_metadata=FULL.
//
// # Exactly once
//
// Every message has a deterministic Nats-Msg-Id (MsgID: the task, the
// transaction's GTID or server and file position, the event's index).
// The checkpoint — position, MariaDB history, epoch, owner — is an entry
// of a JetStream key-value bucket, moved with a compare-and-set on its
// revision only after JetStream has acknowledged every message of the
// batch it covers. A run claims the entry by raising its epoch, with a
// compare-and-set too, and refuses an older epoch; a fenced owner's
// next compare-and-set fails. A run that resumes from the checkpoint
// re-publishes what its predecessor published after it, with the same
// ids, and JetStream drops those within its duplicate window: that is
// why the window must outlast a takeover (CheckWindow), and why
// docs/replication.md states the limits.
//
// # Rules
//
// This package must never move a checkpoint before every message it
// covers is acknowledged, never publish a message without its
// Nats-Msg-Id, never log or return a credential (URLs are shown
// redacted, User and Password never), and never import the coordination
// client: fencing is done in JetStream, where the data is.
package natssink
