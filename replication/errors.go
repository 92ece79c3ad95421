package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// Errors of package replication. They are wrapped with the task and the
// detail; test them with errors.Is.
var (
	// ErrConfig reports a Config that cannot work; the message names the
	// field.
	ErrConfig = errors.New("replication: invalid configuration")
	// ErrSourceConfig reports a source server that is not set up for
	// row-based replication (binary log off, binlog_format or
	// binlog_row_image wrong). The message names the variable and the fix.
	// It wraps ErrNonRetryable.
	ErrSourceConfig = fmt.Errorf("replication: source is not set up for row-based replication (%w)", ErrNonRetryable)
	// ErrFenced reports that the target refused a commit because a
	// replicator with a larger epoch has claimed the task there. The
	// replicator must stop: someone else owns the task now.
	ErrFenced = errors.New("replication: fenced by a newer epoch")
	// ErrNonRetryable marks a failure that will happen again if retried: a
	// statement the target refuses, a missing table, denied access, a
	// purged binary log. Run returns it instead of retrying.
	ErrNonRetryable = errors.New("replication: non-retryable error")
	// ErrOtherSource reports a checkpoint written from another source
	// server than the one now behind the source address, which cannot be
	// resumed there: it has no GTID state, the new server's GTID state
	// does not contain it, or the new server has errant transactions,
	// which the old one never had and the target would never get (see
	// CheckTakeover). The message names both servers, both GTID states,
	// the errant transactions and the way out. It wraps ErrNonRetryable.
	ErrOtherSource = fmt.Errorf("replication: the checkpoint is of another source server (%w)", ErrNonRetryable)
	// ErrNotOnSource reports a position the source server cannot serve:
	// a binlog file or offset it does not have (purged, or never
	// written), another server's file position, or a GTID state beyond
	// its own. It wraps ErrNonRetryable.
	ErrNotOnSource = fmt.Errorf("replication: the source cannot serve the position (%w)", ErrNonRetryable)
	// ErrSnapshotUnsupported reports a sink that cannot write a snapshot
	// copy (start: snapshot) yet. It wraps ErrNonRetryable.
	ErrSnapshotUnsupported = fmt.Errorf("replication: this sink cannot copy a snapshot yet; start the task from a binlog position instead (%w)", ErrNonRetryable)
	// ErrIncompatibleTable reports a target table whose columns are not
	// the source table's, found before a snapshot copies into it. The
	// message names the table and the column. It wraps ErrNonRetryable.
	ErrIncompatibleTable = fmt.Errorf("replication: target table differs from the source table (%w)", ErrNonRetryable)
	// ErrBusy reports a second concurrent Run on one Replicator.
	ErrBusy = errors.New("replication: Run is already running")
	// ErrClosed reports a Run on, or interrupted by, a closed Replicator.
	ErrClosed = errors.New("replication: replicator is closed")
)

// ApplyError is a statement the target refused. It carries the statement
// (shortened when long), the source transaction it came from and the
// server's error; errors.As finds it in Run's error.
type ApplyError struct {
	Statement string   // the statement, at most maxShownStatement bytes
	Source    Position // end of the source transaction being applied
	Err       error    // the server's error, e.g. *mysql.MySQLError
}

// maxShownStatement bounds the statement kept in an ApplyError: a batch
// of rows can be megabytes long, and its head says which table and kind.
const maxShownStatement = 2048

func newApplyError(stmt string, src Position, err error) *ApplyError {
	if len(stmt) > maxShownStatement {
		stmt = fmt.Sprintf("%s… (%d bytes)", stmt[:maxShownStatement], len(stmt))
	}
	return &ApplyError{Statement: stmt, Source: src, Err: err}
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("target refused statement of source transaction ending at %s: %v; statement: %s", e.Source, e.Err, e.Statement)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// nonRetryable wraps err so that errors.Is(err, ErrNonRetryable) holds,
// keeping err's chain (errors.As still finds an ApplyError).
func nonRetryable(err error) error {
	if err == nil || errors.Is(err, ErrNonRetryable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNonRetryable, err)
}

// MySQL server error codes the classification below names.
const (
	erAccessDenied       = 1045 // wrong user or password
	erDBAccessDenied     = 1044
	erTableAccessDenied  = 1142
	erSpecificAccess     = 1227 // e.g. REPLICATION SLAVE missing
	erMasterFatalReading = 1236 // binlog purged, bad position, duplicate server id…
	erConCount           = 1040 // too many connections
	erServerShutdown     = 1053
	erLockWaitTimeout    = 1205
	erLockDeadlock       = 1213
	erQueryInterrupted   = 1317
	erReadOnly           = 1290 // --read-only during a switchover
	erReadOnlyTxn        = 1792
	erConnectionKilled   = 1927 // MariaDB: KILL CONNECTION
	erStatementTimeout   = 1969 // MariaDB max_statement_time
	erClientIdleTimeout  = 4031 // MySQL 8 idle disconnect
	erNetReadError       = 1158
	erNetReadInterrupted = 1159
	erNetErrorOnWrite    = 1160
	erNetWriteInterrupt  = 1161
	erSlaveSameID        = 4052 // MariaDB: another replica took our server id
)

// transientCodes are server errors that a later attempt can get past: the
// server is going away, busy, or chose this transaction as a deadlock
// victim. Every other server error is a property of the statement or of
// the setup and would repeat.
var transientCodes = map[uint16]bool{
	erConCount: true, erServerShutdown: true, erLockWaitTimeout: true, erLockDeadlock: true,
	erQueryInterrupted: true, erReadOnly: true, erReadOnlyTxn: true, erConnectionKilled: true,
	erStatementTimeout: true, erClientIdleTimeout: true, erNetReadError: true,
	erNetReadInterrupted: true, erNetErrorOnWrite: true, erNetWriteInterrupt: true,
	// MariaDB ends a dump thread with this when a replica with the same
	// server id connects: during a failover the old RUNNING and its
	// successor share the task's server id for a moment. The loser is
	// either a zombie, which the epoch fence stops at its next commit, or
	// the live instance, whose next connection ends the zombie's dump.
	erSlaveSameID: true,
}

// serverErrorCode returns the MySQL error code in err's chain, from either
// client library, and whether there is one.
func serverErrorCode(err error) (code uint16, msg string, ok bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number, me.Message, true
	}
	var ge *gomysql.MyError
	if errors.As(err, &ge) {
		return ge.Code, ge.Message, true
	}
	return 0, "", false
}

// retryable reports whether err is worth another attempt: the connection
// broke, the server is restarting or busy, or a deadlock picked us. An
// error already marked non-retryable, a fence, and server errors that
// describe the statement or the setup are not.
func retryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNonRetryable), errors.Is(err, ErrFenced), errors.Is(err, ErrConfig):
		return false
	case errors.Is(err, context.Canceled):
		return false
	}
	if code, msg, ok := serverErrorCode(err); ok {
		if code == erMasterFatalReading {
			// The same code covers "another replica with this server id
			// connected" (transient: a standby took over the dump thread)
			// and a purged or impossible position (permanent).
			m := strings.ToLower(msg)
			return strings.Contains(m, "same server_uuid") || strings.Contains(m, "same server_id") || strings.Contains(m, "same server id")
		}
		return transientCodes[code]
	}
	return true
}

// classify is the one rule Open, ResolveStart and Run apply to what they
// return: an error that another attempt cannot get past (see retryable)
// is marked ErrNonRetryable, so a caller retries exactly the others. A
// fence, a configuration error and a cancellation keep their own
// identity.
func classify(err error) error {
	switch {
	case err == nil, retryable(err),
		errors.Is(err, ErrFenced), errors.Is(err, ErrConfig), errors.Is(err, context.Canceled):
		return err
	}
	return nonRetryable(err)
}

// accessDenied reports a login or privilege failure, which no retry fixes.
func accessDenied(err error) bool {
	code, _, ok := serverErrorCode(err)
	return ok && (code == erAccessDenied || code == erDBAccessDenied || code == erSpecificAccess || code == erTableAccessDenied)
}
