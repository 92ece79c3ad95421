// Package replication copies row changes from a MySQL or MariaDB source
// to a MySQL or MariaDB target, exactly once, and knows nothing of
// ZooKeeper: package core decides who runs a task and from where, and
// calls Open and Run here.
//
// # Sinks
//
// The stream — reader, filter, routes, transactions, positions, fencing
// by epoch — is Run's; where rows go is a Sink (sink.go): Open and DryRun,
// and per attempt a SinkRun that claims the checkpoint for the epoch and
// takes segments until it commits them. The MySQL sink (mysqlsink.go,
// the applier below) is the default; package replication/natssink
// publishes to NATS JetStream, package replication/kafkasink produces to
// Kafka. What follows describes the MySQL sink.
//
// # Data path
//
// A reader (go-mysql's BinlogSyncer, registered on the source as a replica
// with its own server id) turns the binary log into source transactions:
// the row images of replicated tables, or one DDL statement. The row
// images of tables whose columns are all of common types (integers,
// YEAR, DECIMAL, FLOAT, DOUBLE, BIT, ENUM, SET, character and binary
// strings, BLOB and TEXT, DATE and the fractional DATETIME, TIMESTAMP and
// TIME) are decoded by rowdecode.go, as the syncer's RowsEventDecodeFunc,
// into exactly the values go-mysql's decoder gives but with a few
// allocations per event rather than several per row; any other event
// (other types or metadata, MySQL's binary JSON, MariaDB's compressed
// events, a body that does not parse) is decoded by go-mysql, whole.
// An applier writes each transaction into the target through one
// connection, in order:
//
//   - rows of a table with a primary key (or a unique key of NOT NULL
//     columns) become REPLACE for inserts and updates and DELETE … IN for
//     deletes, merged into multi-row statements;
//   - rows of a table without one are INSERTed, and updated or deleted one
//     at a time by their full before image (col <=> value …, LIMIT 1);
//   - DDL (CREATE, ALTER, DROP, RENAME, TRUNCATE of tables and indexes,
//     CREATE/ALTER/DROP DATABASE) runs with its names routed; views,
//     triggers, routines, users and grants are not replicated;
//   - the task's checkpoint row (source position, GTID state, epoch,
//     owner, time) is updated by the last statement of every target
//     transaction, and the whole transaction — BEGIN, rows, checkpoint,
//     COMMIT — travels in as few multi-statement packets as it fits,
//     except that full 100-row chunks of a table's REPLACE go through a
//     prepared statement (binary protocol: the target parses no values)
//     when its character columns are all utf8mb4 or binary.
//
// One packet or prepared execution is in flight at a time, on a goroutine
// of its own, while the applier builds the next; a commit counts once the
// target has answered it.
//
// Small source transactions share a target transaction (up to
// Config.BatchRows rows) while the reader has more ready or the target
// is still busy with the previous packet; a source
// transaction is never split between target transactions, and one larger
// than Config.MaxTxnRows is streamed into a single target transaction.
// BatchRows 1 commits every source transaction on its own, for readers
// that must see each one. Within a target transaction the row changes of
// a keyed table merge into one REPLACE and one DELETE, changes to the
// same key kept in order.
//
// # Exactly once
//
// The checkpoint commits in the same target transaction as the rows it
// covers, so after any crash — of the replicator, the target or the
// source — the target's checkpoint is exactly what the target holds. Run
// resumes from it (or from the caller's position if that is later), so no
// transaction is lost and none is applied twice. A table without a key,
// where a repeated INSERT would duplicate a row, proves it in the tests.
//
// Row images make the copy robust beyond that: they are the rows as the
// source left them, not the statements that produced them. An UPDATE t SET
// counter = counter + 1 is logged as the row before (counter = 41) and the
// row after (counter = 42); the applier writes counter = 42, so even
// applying the event twice leaves 42. For keyed tables every write is an
// upsert or a delete by key, so a replay from an earlier position
// converges to the same rows.
//
// # Fencing
//
// Run first claims the checkpoint row by raising its epoch to its own
// (failing with ErrFenced if the stored one is larger), and every commit
// re-checks it inside the transaction, holding the row lock until COMMIT:
// once a Run with a larger epoch has claimed the task, a Run with a smaller
// one cannot commit another row. The check is an UPDATE that sets epoch to
// NULL (an error in the strict sessions the applier uses) when the stored
// epoch is larger, so the COMMIT queued after it in the same packet never
// runs. The same UPDATE moves the checkpoint only from the position its
// Run expects, which fences a Run against an earlier one of the same
// epoch whose last packet the target executed after its client was gone.
//
// DDL commits by itself, so it cannot share a transaction with the
// checkpoint. It goes in three fenced steps: mark the row "DDL of the
// transaction starting at X pending", run the DDL, record the position past
// it. A crash in between leaves the mark, and the resumed Run treats
// "already exists" and "already gone" errors of that one statement as done.
//
// # Types
//
// Values are written as SQL literals, or sent as the parameters those
// literals stand for (paramOf), that store what the source stored:
// unsigned integers reinterpreted at their column's width, DECIMAL as exact
// text, FLOAT and DOUBLE as shortest round-trip decimals, temporal values
// as text with every session in UTC (TIMESTAMP included), strings with
// their column's character set as introducer so that bytes are never
// converted, BLOBs and binary strings as _binary, ENUM and SET through
// their labels, BIT as integers, JSON as text (MariaDB's JSON is LONGTEXT).
// Generated columns are computed by the target and never written.
//
// Column names, types and keys come from the target's information_schema,
// not the source's: DDL is applied in binlog order, so the target table is
// as the source table was when the event was written, while the source's
// information_schema describes it as it is now, after any later ALTER.
// With binlog_row_metadata=FULL on the source, the column names in each
// event are also checked against the target's.
//
// # Snapshot
//
// A task with Config.Snapshot (start: snapshot) and no checkpoint first
// copies every included table's rows, then follows the binlog; the
// target ends as the source, nothing missed, nothing applied twice, while
// the source takes writes. The copy reads consistent snapshots of the
// source — START TRANSACTION WITH CONSISTENT SNAPSHOT, whose binlog
// position P MariaDB reports without any lock (binlog_snapshot_file and
// binlog_snapshot_position; on MySQL P is read under FLUSH TABLES WITH
// READ LOCK held for three statements, lock_wait_timeout 1 s) — and
// interleaves them with the binlog, read by the same Run from its
// checkpoint:
//
//   - before reading from a snapshot at P, the applier brings the target
//     up to exactly P from the binlog, for the tables whose copy has
//     begun (copied tables, and the keyed table being copied); the
//     changes of tables not begun are skipped, and so is DDL naming one;
//   - a keyed table (primary key, or unique NOT NULL key, as the applier
//     identifies rows) is read in chunks of Snapshot.ChunkRows in key
//     order after the cursor, the key of the last row copied, and written
//     with REPLACE; each chunk commits in one target transaction with the
//     checkpoint at P and the cursor (the checkpoint row's snapshot_state),
//     fenced by epoch like every commit;
//   - a table without a key is copied in one target transaction, its
//     rows and the cursor moving past it together: with no key to resume
//     by, a crash re-copies it whole into a target that holds none of it;
//   - a snapshot is read for at most ten seconds; the next one is at a
//     later P, and the target is brought up to it first.
//
// Why it is exact: at every commit the target holds, for each copied
// table and for the keys up to the cursor of the table being copied,
// exactly the source's rows at the checkpoint position. Catching up to
// the next snapshot's P applies each transaction once, by position, and
// keeps that true. Past the cursor the catch-up may write rows too (the
// binlog's row images of keys not copied yet); each is the source's row
// as of its last change before P, and the chunks read at P then REPLACE
// every row the source has there, so the target there is the source at P
// too. A key deleted before P is deleted or never written. Tables not
// begun see nothing until their first chunk, read at the checkpoint's P.
// After a crash, Run resumes from the checkpoint (position and cursor),
// opens a new snapshot, catches up and goes on with the next chunk; once
// every table is copied the cursor is marked done and the binlog applies
// to all tables.
//
// The target tables are created from the source's SHOW CREATE TABLE
// (routes applied) when missing, in the copy's turn, so that DDL skipped
// before is in the definition; an existing one must have the source's
// columns, in order and of the same types (ErrIncompatibleTable names
// the table and the column), and should be empty: rows it holds under
// keys the source lacks stay. One snapshot is one source transaction on
// one connection, so Snapshot.Threads is 1; Snapshot.MaxRowsPerSecond
// throttles the copy. Only the MySQL sink copies yet; the NATS sink
// refuses start: snapshot (ErrSnapshotUnsupported).
//
// # Verify
//
// Replicator.Verify (shepherd ctl task verify) proves the target equals
// the source, or says where it does not, while the task runs and the
// source takes writes. For each included table (routes applied) with a
// key — the key the applier identifies rows by — it walks chunks of
// VerifyOptions.ChunkRows rows in key order, with the copy's key order
// and range conditions (snapshot.go). A chunk is a key range
// (after, through], its upper key read from the source; the first and
// last chunks are open, so that rows the target has beyond the source's
// keys are in one.
//
//   - The source's checksum of the chunk is read in a consistent snapshot
//     at a known binlog position P (startSnapshot, as the copy opens
//     them: no lock on MariaDB), opened for that chunk alone: the count
//     of rows and the sum of the first 60 bits of each row's MD5, an
//     order-free sum that counts duplicates. A row's hash is of every
//     column as text in one CONCAT_WS: character and binary strings as
//     the hex of their bytes (no character set conversion, and no
//     collation: 'a' and 'A' differ), ENUM, SET and BIT as numbers, NULL
//     as N, which no hex or number text equals. The same query runs on
//     the target, so identical rows give identical sums when both servers
//     store and render the values alike (the same flavor; MySQL and
//     MariaDB may print a FLOAT differently).
//   - The target's checksum is read in a consistent snapshot of the
//     target whose checkpoint row is at or after P: the target as of a
//     position C ≥ P. Verify waits for it (VerifyOptions.Wait); a task
//     that is not running fails the verify there.
//   - Equal sums: the chunk is equal. Different sums may be a change in
//     (P, C]: the chunk's rows are then compared by key and hash, at a
//     new P each time, VerifyOptions.Rechecks times, and only the keys
//     that differ at every comparison, with the same rows on both sides
//     each time, are a confirmed difference — missing on the target,
//     extra on the target, or changed. A key the source changed between
//     P and C differs in one comparison, not in all; one it changes
//     without pause (a hot counter) differs each time, but with other
//     rows each time, and is not confirmed either.
//
// A table the target lacks is one confirmed difference.
//
// A table without a key is compared whole, the same way, but with no
// key to tell a row changed after P from a wrong one, only a comparison
// where the target's checkpoint is exactly P confirms a difference; an
// equal one at C ≥ P settles equality. When neither happens within
// 10×Rechecks comparisons (writes to the table never pause), the table
// is reported unverified rather than different.
//
// Repair (VerifyOptions.Repair) rewrites the confirmed keys of a keyed
// table on the target, not through the running task's applier (which
// belongs to another process, its owner), but in a transaction of its
// own fenced the same way: it locks the task's checkpoint row
// (SELECT … FOR UPDATE) and goes on only while its epoch is not larger
// than the repair's (the epoch the checkpoint held when the verify
// began, or the one given); a newer owner fails it with ErrFenced. While
// it holds the lock the applier cannot commit, so the target stays at
// its checkpoint C; the repair reads the source's rows of those keys in
// a snapshot at P ≥ C, deletes the keys the source lacks, REPLACEs the
// others, and commits. A change to one of those keys in (C, P] is
// applied again by the applier afterwards, as the full row image it is
// (REPLACE or DELETE by key), so the target converges to the source.
// The chunk is compared again after the repair. Keyless tables are not
// repaired: with no key, a row cannot be rewritten alone.
//
// The source is never locked beyond one chunk's read (on MySQL,
// startSnapshot's FLUSH TABLES WITH READ LOCK for three statements); the
// target's checkpoint row is locked only by a repair, for the reads and
// writes of one chunk's keys.
//
// # Failures
//
// Lost connections, server restarts, a silent source (nothing, not even
// a heartbeat, for three heartbeat periods plus two seconds), deadlocks
// and lock timeouts are retried with backoff,
// each attempt resuming from the target's checkpoint; Progress reports
// StateRetrying with the error meanwhile. What a retry cannot fix stops
// Run with an error wrapping ErrNonRetryable: ErrSourceConfig (binlog off,
// not ROW, not FULL images, a statement-based event), denied access, a
// purged position, a missing target table, a statement the target refuses
// (an *ApplyError with the statement and the server's error; a failing
// multi-statement packet is replayed statement by statement to name it).
//
// # Concurrency
//
// A Replicator's methods may be called from several goroutines, but only
// one Run may be active at a time. Run owns two goroutines — the reader and
// go-mysql's socket reader — and stops and waits for both before it
// returns; the applier owns the goroutine of the packet in flight and
// waits for it before it uses the connection otherwise or returns. There
// is no lock ordering: the reader and the applier share only a channel
// and two atomics, the applier and its packet goroutine a channel. The
// row decoder runs on go-mysql's goroutines and keeps nothing between
// events but two atomic counters.
//
// This package must not import the coordination client; fencing against
// other owners is done in the target database, where the data is.
package replication
