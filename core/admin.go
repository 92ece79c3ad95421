package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Admin manages tasks in the coordination tree: the operations behind
// `shepherd ctl task …` and the control server. Every change is a
// conditional write, so concurrent admins do not lose each other's.
type Admin struct {
	s      *recipe.Session
	layout Layout
}

// NewAdmin returns an Admin of the tasks under root ("" for DefaultRoot).
func NewAdmin(s *recipe.Session, root string) *Admin {
	return &Admin{s: s, layout: NewLayout(root)}
}

// Layout returns the znode layout the Admin works on.
func (a *Admin) Layout() Layout { return a.layout }

// TaskStatus is a task as operators see it: spec, checkpoint, instances.
type TaskStatus struct {
	Name string `json:"name"`
	// Spec is nil when the task node holds no valid spec; SpecError says
	// why.
	Spec       *Spec       `json:"spec,omitempty"`
	SpecError  string      `json:"specError,omitempty"`
	LastCommit *LastCommit `json:"lastCommit,omitempty"`
	// LastCommitError says why lastCommit could not be read.
	LastCommitError string `json:"lastCommitError,omitempty"`
	// Verify is the last verify report (Admin.Verify), nil when none was
	// stored; VerifyError says why it could not be read.
	Verify      *VerifyReport `json:"verify,omitempty"`
	VerifyError string        `json:"verifyError,omitempty"`
	// Instances are in line order: the first owns the task.
	Instances []Instance `json:"instances"`
	// Stray are instances registered the wrong way: hot-standby cores
	// (--task) of a cold-standby task. They report FAILED and run nothing.
	Stray []Instance `json:"stray,omitempty"`
}

// Instance is one instance node and its state.
type Instance struct {
	Name  string        `json:"name"`
	State InstanceState `json:"state"`
	// Raw is the node's data when it is not an instance state.
	Raw string `json:"raw,omitempty"`
}

// Owner returns the instance that owns the task, if any.
func (ts *TaskStatus) Owner() (Instance, bool) {
	if len(ts.Instances) == 0 {
		return Instance{}, false
	}
	return ts.Instances[0], true
}

// AddTask stores a new task. With replace it overwrites an existing
// task's spec (a running instance restarts with it); without, an existing
// spec is ErrTaskExists. A task node a core created while waiting for its
// spec counts as no task.
func (a *Admin) AddTask(ctx context.Context, sp *Spec, replace bool) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	p := a.layout.Task(sp.Name)
	if err := a.retry(ctx, func() error { return a.s.EnsurePath(ctx, a.layout.Tasks()) }); err != nil {
		return fmt.Errorf("core: add task %q: %w", sp.Name, err)
	}
	data := sp.Marshal()
	// A spec with an inline password is readable by the writer identity
	// alone (no --read-acl viewer); the ACL is set before the data, so
	// that the password never sits under a wider ACL.
	acl := a.s.NodeACL()
	if sp.HasInlinePassword() {
		acl = a.s.SecretACL()
	}
	var old *Spec
	err := a.retry(ctx, func() error {
		_, err := a.s.Create(ctx, p, data, zk.FlagPersistent, acl)
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		cur, st, err := a.s.Get(ctx, p)
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(cur))) > 0 {
			if !replace {
				return fmt.Errorf("%w: %s (use --replace to change its spec)", ErrTaskExists, sp.Name)
			}
			old, _ = decodeStoredSpec(sp.Name, cur)
		}
		if _, err := a.s.SetACL(ctx, p, acl, -1); err != nil {
			return err
		}
		_, err = a.s.Set(ctx, p, data, st.Version)
		return err
	})
	if err != nil {
		return fmt.Errorf("core: add task %q: %w", sp.Name, err)
	}
	if old != nil && old.Standby.Mode == ModeCold && (sp.Standby.Mode != ModeCold || sp.Standby.Group != old.Standby.Group) {
		// Its old group's owner gives it up on seeing the new spec; the
		// membership goes when empty (and is skipped by scans till then).
		a.dropGroupMembership(ctx, old.Standby.Group, sp.Name)
	}
	if sp.Standby.Mode == ModeCold {
		if err := a.retry(ctx, func() error { return a.s.EnsurePath(ctx, a.layout.GroupTask(sp.Standby.Group, sp.Name)) }); err != nil {
			return fmt.Errorf("core: add task %q to group %q: %w", sp.Name, sp.Standby.Group, err)
		}
	}
	return nil
}

// dropGroupMembership deletes a task's node in a group if no instance is
// in it; failures are left for an operator (the scan skips the entry).
func (a *Admin) dropGroupMembership(ctx context.Context, group, task string) {
	for _, p := range []string{a.layout.GroupInstances(group, task), a.layout.GroupTask(group, task)} {
		if err := a.retry(ctx, func() error { return a.s.Delete(ctx, p, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return
		}
	}
}

// Task returns the status of one task, or ErrNoTask.
func (a *Admin) Task(ctx context.Context, name string) (TaskStatus, error) {
	if err := checkName(name); err != nil {
		return TaskStatus{}, fmt.Errorf("%w: task name: %v", ErrNoTask, err)
	}
	ts := TaskStatus{Name: name, Instances: []Instance{}}
	var data []byte
	err := a.retry(ctx, func() (err error) {
		data, _, err = a.s.Get(ctx, a.layout.Task(name))
		return err
	})
	dir := a.layout.Instances(name)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ts, fmt.Errorf("%w: %s", ErrNoTask, name)
	case errors.Is(err, zk.ErrNoAuth):
		// A viewer (--read-acl) of a spec holding an inline password.
		ts.SpecError = fmt.Sprintf("%s: not readable with this credential: a spec holding an inline password is readable by its writer alone", a.layout.Task(name))
	case err != nil:
		return ts, fmt.Errorf("core: task %q: %w", name, err)
	}
	if ts.SpecError == "" {
		if sp, err := decodeStoredSpec(name, data); err != nil {
			ts.SpecError = err.Error()
		} else {
			ts.Spec = sp
			dir = a.layout.InstancesOf(sp)
		}
	}
	lc, exists, err := readLastCommit(ctx, a.s, a.layout.LastCommit(name))
	switch {
	case err != nil && !exists:
		return ts, fmt.Errorf("core: task %q: %w", name, err)
	case err != nil:
		ts.LastCommitError = err.Error()
	case exists:
		ts.LastCommit = &lc
	}
	if ts.Verify, err = a.readVerify(ctx, name); err != nil {
		ts.VerifyError = err.Error()
	}
	if ts.Instances, err = a.instances(ctx, dir); err != nil {
		return ts, fmt.Errorf("core: task %q: %w", name, err)
	}
	if hot := a.layout.Instances(name); dir != hot {
		if ts.Stray, err = a.instances(ctx, hot); err != nil {
			return ts, fmt.Errorf("core: task %q: %w", name, err)
		}
	}
	return ts, nil
}

// instances reads the instance nodes under dir, in line order.
func (a *Admin) instances(ctx context.Context, dir string) ([]Instance, error) {
	var names []string
	err := a.retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []Instance{}, nil
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, func(x, y string) int { return seqOf(x) - seqOf(y) })
	out := make([]Instance, 0, len(names))
	for _, n := range names {
		var data []byte
		err := a.retry(ctx, func() (err error) {
			data, _, err = a.s.Get(ctx, dir+"/"+n)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone as we looked
		}
		if err != nil {
			return nil, err
		}
		in := Instance{Name: n}
		if st, err := ParseInstanceState(data); err != nil || st.State == "" {
			in.Raw = string(data)
		} else {
			in.State = st
		}
		out = append(out, in)
	}
	return out, nil
}

// seqOf is the sequence number at the end of an instance node's name
// (-1 if none): instances are in line by it, not by host name.
func seqOf(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || len(name)-i-1 != 10 {
		return -1
	}
	return n
}

// Tasks returns the status of every task, by name.
func (a *Admin) Tasks(ctx context.Context) ([]TaskStatus, error) {
	var names []string
	err := a.retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, a.layout.Tasks())
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []TaskStatus{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("core: list tasks: %w", err)
	}
	slices.Sort(names)
	out := make([]TaskStatus, 0, len(names))
	for _, n := range names {
		ts, err := a.Task(ctx, n)
		if errors.Is(err, ErrNoTask) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ts)
	}
	return out, nil
}

// SetState sets a task's desired state, running or stopped. Setting
// running also clears a recorded failure and restarts the owner even if
// it was running already: it is how operators retry a FAILED task.
func (a *Admin) SetState(ctx context.Context, name, state string) error {
	if state != DesiredRunning && state != DesiredStopped {
		return fmt.Errorf("%w: state %q: want running or stopped", ErrInvalidSpec, state)
	}
	p := a.layout.Task(name)
	if state == DesiredRunning {
		if err := a.clearFailure(ctx, name); err != nil {
			return err
		}
	}
	err := a.retry(ctx, func() error {
		data, st, err := a.s.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s", ErrNoTask, name)
		}
		if err != nil {
			return err
		}
		sp, err := decodeStoredSpec(name, data)
		if err != nil {
			return err
		}
		sp.State = state
		_, err = a.s.Set(ctx, p, sp.Marshal(), st.Version)
		return err
	})
	if err != nil {
		return fmt.Errorf("core: set task %q %s: %w", name, state, err)
	}
	return nil
}

// clearFailure removes the failure record from a task's lastCommit,
// keeping its owner and epoch.
func (a *Admin) clearFailure(ctx context.Context, name string) error {
	return a.editLastCommit(ctx, name, func(lc *LastCommit, err error) (bool, error) {
		if err != nil || lc.Failure == nil {
			return false, nil
		}
		lc.Failure = nil
		return true, nil
	})
}

// editLastCommit reads a task's lastCommit, if it has one, has edit change
// it (parseErr is why it could not be read, if so), and writes it back
// unless edit says not to, on condition that nobody wrote it meanwhile.
func (a *Admin) editLastCommit(ctx context.Context, name string, edit func(lc *LastCommit, parseErr error) (bool, error)) error {
	p := a.layout.LastCommit(name)
	return a.retry(ctx, func() error {
		data, st, err := a.s.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		lc, err := ParseLastCommit(data)
		write, err := edit(&lc, err)
		if err != nil || !write {
			return err
		}
		_, err = a.s.Set(ctx, p, lc.Marshal(), st.Version)
		return err
	})
}

// RemoveTask deletes a task: spec, lastCommit and group membership. It
// refuses (ErrTaskBusy) while instances are registered for it: stop
// their cores first (for a cold task, stopping the task is enough — its
// owner gives it up).
func (a *Admin) RemoveTask(ctx context.Context, name string) error {
	ts, err := a.Task(ctx, name)
	if err != nil {
		return err
	}
	if live := append(ts.Instances, ts.Stray...); len(live) > 0 {
		names := make([]string, len(live))
		for i, in := range live {
			names[i] = in.Name
		}
		hint := "stop the cores started with --task " + name
		if ts.Spec != nil && ts.Spec.Standby.Mode == ModeCold {
			hint = "shepherd ctl task stop " + name + " first; its owner then gives it up"
		}
		return fmt.Errorf("%w: %s has instances %s: %s", ErrTaskBusy, name, strings.Join(names, ", "), hint)
	}
	paths := []string{a.layout.LastCommit(name), a.layout.SwitchSource(name), a.layout.Verify(name), a.layout.Instances(name)}
	if ts.Spec != nil && ts.Spec.Standby.Mode == ModeCold {
		paths = append(paths, a.layout.GroupInstances(ts.Spec.Standby.Group, name), a.layout.GroupTask(ts.Spec.Standby.Group, name))
	}
	paths = append(paths, a.layout.Task(name))
	for _, p := range paths {
		err := a.retry(ctx, func() error { return a.s.Delete(ctx, p, -1) })
		switch {
		case errors.Is(err, zk.ErrNotEmpty):
			return fmt.Errorf("%w: %s: %s gained children meanwhile (a core registered?)", ErrTaskBusy, name, p)
		case err != nil && !errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("core: remove task %q: %s: %w", name, p, err)
		}
	}
	return nil
}

// EpochReset is what Admin.ResetEpoch found and did.
type EpochReset struct {
	Task string `json:"task"`
	// TargetEpoch is the epoch the target's checkpoint row held.
	TargetEpoch int64 `json:"targetEpoch"`
	// LastCommitEpoch is the epoch lastCommit held; -1 if there was none.
	LastCommitEpoch int64 `json:"lastCommitEpoch"`
}

// ResetEpoch sets a task's stored epochs — in the target's checkpoint row
// (through e) and in lastCommit — back to 0, keeping the positions. Epochs
// are zxids of one coordination ensemble: after moving tasks to another
// ensemble, or starting `shepherd coord` on an empty data directory, new
// owners have smaller epochs than those stored and are fenced for good.
//
// It refuses (ErrTaskBusy) unless the task's desired state is stopped and
// none of its instances is RUNNING: with the fence down, only a stopped
// task is safe. Cores still running the task under the old ensemble are
// beyond its sight; stop them first.
func (a *Admin) ResetEpoch(ctx context.Context, name string, e Engine, log *slog.Logger) (EpochReset, error) {
	res := EpochReset{Task: name, LastCommitEpoch: -1}
	ts, err := a.Task(ctx, name)
	if err != nil {
		return res, err
	}
	if ts.Spec == nil {
		return res, fmt.Errorf("%w: %s", ErrNoTask, name)
	}
	if ts.Spec.State != DesiredStopped {
		return res, fmt.Errorf("%w: %s is %s: shepherd ctl task stop %s first", ErrTaskBusy, name, ts.Spec.State, name)
	}
	for _, in := range ts.Instances {
		if in.State.State == StateRunning {
			return res, fmt.Errorf("%w: %s is still RUNNING on %s: wait for it to pause", ErrTaskBusy, name, in.Name)
		}
	}
	if err := a.s.CheckTrusted(ctx, a.layout.Root, a.layout.Task(name)); err != nil {
		return res, fmt.Errorf("core: reset epoch of task %q: %w", name, err)
	}
	r, err := e.Open(ctx, ts.Spec, log)
	if err != nil {
		return res, fmt.Errorf("core: reset epoch of task %q: %w", name, err)
	}
	defer r.Close()
	if res.TargetEpoch, err = r.ResetEpoch(ctx); err != nil {
		return res, fmt.Errorf("core: reset epoch of task %q: %w", name, err)
	}
	err = a.editLastCommit(ctx, name, func(lc *LastCommit, err error) (bool, error) {
		if err != nil {
			return false, fmt.Errorf("%s: %w", a.layout.LastCommit(name), err)
		}
		res.LastCommitEpoch = lc.Epoch
		lc.Epoch = 0
		return true, nil
	})
	if err != nil {
		return res, fmt.Errorf("core: reset epoch of task %q in lastCommit: %w", name, err)
	}
	return res, nil
}

func (a *Admin) retry(ctx context.Context, fn func() error) error { return a.s.Retry(ctx, fn) }

// PolicyACL is the ACL the security policy gives the node at p of the
// replication tree (shepherd ctl secure): the session's secret ACL for a
// task spec holding an inline password (or not decodable), its node ACL
// otherwise.
func (a *Admin) PolicyACL(ctx context.Context, p string) ([]zk.ACL, error) {
	name, ok := strings.CutPrefix(p, a.layout.Tasks()+"/")
	if !ok || strings.Contains(name, "/") {
		return a.s.NodeACL(), nil
	}
	var data []byte
	if err := a.retry(ctx, func() (err error) {
		data, _, err = a.s.Get(ctx, p)
		return err
	}); err != nil {
		return nil, err
	}
	// A spec that does not decode may hold a password all the same.
	if sp, err := decodeStoredSpec(name, data); err != nil || sp.HasInlinePassword() {
		return a.s.SecretACL(), nil
	}
	return a.s.NodeACL(), nil
}
