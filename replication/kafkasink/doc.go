// Package kafkasink is the replication sink that produces a task's row
// changes to Kafka, exactly once for read_committed consumers, as JSON
// events in one of three formats: Debezium's envelope (the one the NATS
// sink publishes, from package changeevent), Canal's flat message or
// Maxwell's.
//
// # Topics, keys and events
//
// A row change of source table db.t (after the task's routes) goes to
// <prefix>.<db>.<t> (names escaped by TopicName), or to one topic for
// all tables (TopicSingle); a schema change (DDL) to the schema topic,
// <prefix>._schema by default. The record key is the primary key's
// columns as JSON ({"id":7}), so a key's changes stay in one partition,
// in order; a table without a primary key gives no key. Every record
// carries its source facts as headers (task, server identity, file and
// position of the transaction's start, GTID, commit time, event index);
// the formats carry them in their bodies as far as they have fields for
// them. Events are rendered from the row images and the table map alone,
// so the source must log column names: binlog_row_metadata=FULL.
//
// # Exactly once
//
// The task's checkpoint is a record of the checkpoint topic (compacted;
// key = task, in partition 0). A run owns the task's transactional
// producer (transactional.id TransactionalID(task)) and commits each
// batch of whole source transactions in one Kafka transaction together
// with the checkpoint record that covers them, as Kafka Connect's
// exactly-once sources commit their offsets (KIP-618): a consumer reading
// read_committed sees a batch's events exactly when the checkpoint that
// covers them is committed, and a run resuming from that checkpoint never
// produces them again. A run that dies leaves an open transaction, which
// the next producer of the task aborts.
//
// Claim raises the stored epoch in a transaction of a new producer: its
// first request fences the producer of every earlier claim (a zombie
// owner's commit then fails), and the claim reads the checkpoint as
// committed before its own record, refusing an older epoch than the one
// stored with ErrFenced.
//
// # Rules
//
// This package must never commit a checkpoint outside the transaction of
// the events it covers, never split a source transaction across Kafka
// transactions, never log or return a credential (String and errors show
// the SASL user, never the password), and never import the coordination
// client: fencing is done in Kafka, where the data is.
package kafkasink
