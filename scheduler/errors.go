package scheduler

import "errors"

var (
	// ErrInvalidJob reports a job spec that cannot be scheduled; the
	// wrapped message names the job and field.
	ErrInvalidJob = errors.New("scheduler: invalid job")
	// ErrNoSuchJob reports a job name that is neither configured nor stored.
	ErrNoSuchJob = errors.New("scheduler: no such job")
	// ErrNotMaster reports a result that could not be published because
	// this process is no longer the master of the run (its session ended
	// and another scheduler took the run over).
	ErrNotMaster = errors.New("scheduler: no longer master of the run")
	// ErrJobRefused reports a stored job the scheduler will not run
	// because a jobs-file job has its name.
	ErrJobRefused = errors.New("scheduler: stored job refused")
	// ErrJobExists reports a CreateJob of a name already stored.
	ErrJobExists = errors.New("scheduler: job exists")
	// ErrVersionConflict reports a conditional UpdateJob that found the
	// stored job changed since the version the caller read.
	ErrVersionConflict = errors.New("scheduler: stored job changed since it was read")
	// ErrInvalidParams reports run parameters (run-now --param) out of
	// bounds or of a bad name; the message names the parameter.
	ErrInvalidParams = errors.New("scheduler: invalid run parameters")
	// ErrInvalidLabels reports a scheduler's labels (--labels) of a bad
	// form; the message names the label.
	ErrInvalidLabels = errors.New("scheduler: invalid labels")
	// ErrInvalidHTTPAllow reports a bad --http-allow entry.
	ErrInvalidHTTPAllow = errors.New("scheduler: invalid http allow-list")
	// ErrRunDone reports a run-now of a run key that has a result: a
	// run is never executed again.
	ErrRunDone = errors.New("scheduler: run has a result")
	// ErrUnknownFunc reports a job naming a Go function nobody registered.
	ErrUnknownFunc = errors.New("scheduler: unknown job function")
)
