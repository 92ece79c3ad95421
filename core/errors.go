package core

import "errors"

// Errors of package core. Test them with errors.Is: they are wrapped with
// the task and the detail.
var (
	// ErrInvalidSpec reports a task spec that cannot be run; the message
	// names the fields at fault.
	ErrInvalidSpec = errors.New("core: invalid task spec")
	// ErrNoSpec reports a task node without a spec: a core registered for
	// the task before an operator added it.
	ErrNoSpec = errors.New("core: no task spec")
	// ErrFenced reports a write refused because a newer RUNNING instance
	// has taken the task over: its epoch is larger, or this instance's
	// node is gone. The instance must stop and rejoin as STANDBY.
	ErrFenced = errors.New("core: fenced by a newer instance")
	// ErrNonRetryable marks a replicator failure that will recur if tried
	// again — a statement the target refuses, a source that is not set up
	// for row-based replication. The task goes FAILED.
	ErrNonRetryable = errors.New("core: non-retryable replication error")
	// ErrNoTask reports a task that does not exist.
	ErrNoTask = errors.New("core: no such task")
	// ErrTaskExists reports an add of a task that exists already.
	ErrTaskExists = errors.New("core: task exists")
	// ErrTaskBusy reports a removal of a task that instances still run or
	// stand by for.
	ErrTaskBusy = errors.New("core: task has live instances")
	// ErrBadConfig reports a core configuration that cannot work.
	ErrBadConfig = errors.New("core: bad configuration")
)
