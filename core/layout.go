package core

import (
	"strings"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// DefaultRoot is the root of the replication znodes, below the
// connection's chroot if it has one.
const DefaultRoot = "/mysql_replicator"

// Layout is the znode tree of replication (see docs/replication.md):
//
//	<root>/tasks/<task>                                  spec (JSON)
//	<root>/tasks/<task>/instances/<host>-<seq>           hot standby instances
//	<root>/tasks/<task>/lastCommit                       checkpoint mirror
//	<root>/tasks/<task>/switchSource                     an operator's request to change source
//	<root>/tasks/<task>/verify                           the last verify report (JSON)
//	<root>/tasks-groups/<group>/<task>                   cold group membership
//	<root>/tasks-groups/<group>/<task>/instances/<host>-<seq>
//	<root>/cores/<group>/<host>                          live cores of a group (EPHEMERAL)
//
// The spec and lastCommit of a cold task stay under tasks/<task>, so that
// every verb finds a task in one place whatever its standby mode; the
// group node only says that the group's cores run it.
type Layout struct{ Root string }

// NewLayout returns the layout under root ("" means DefaultRoot).
func NewLayout(root string) Layout {
	if root == "" {
		root = DefaultRoot
	}
	return Layout{Root: strings.TrimRight(root, "/")}
}

// Tasks is the directory of task specs.
func (l Layout) Tasks() string { return l.Root + "/tasks" }

// Task is a task's spec node.
func (l Layout) Task(task string) string { return l.Tasks() + "/" + task }

// Instances is the directory of a hot task's instances.
func (l Layout) Instances(task string) string { return l.Task(task) + "/instances" }

// LastCommit is a task's checkpoint mirror.
func (l Layout) LastCommit(task string) string { return l.Task(task) + "/lastCommit" }

// SwitchSource is a task's pending request to read from another source
// candidate (Admin.SwitchSource); the core that serves it deletes it.
func (l Layout) SwitchSource(task string) string { return l.Task(task) + "/switchSource" }

// Verify is a task's last verify report (Admin.Verify).
func (l Layout) Verify(task string) string { return l.Task(task) + "/verify" }

// Groups is the directory of the cold groups.
func (l Layout) Groups() string { return l.Root + "/tasks-groups" }

// Group is the directory of a cold group's tasks.
func (l Layout) Group(group string) string { return l.Groups() + "/" + group }

// GroupTask is a cold task's membership node in its group.
func (l Layout) GroupTask(group, task string) string { return l.Group(group) + "/" + task }

// GroupInstances is the directory of a cold task's instance (one at a
// time, but for the moment of a scan).
func (l Layout) GroupInstances(group, task string) string {
	return l.GroupTask(group, task) + "/instances"
}

// Cores is the directory of a cold group's live cores: one ephemeral
// member node per core, named by its host, holding a CoreMember. It is a
// sibling of tasks-groups, so that no task name can collide with it.
func (l Layout) Cores(group string) string { return l.CoreGroups() + "/" + group }

// CoreGroups is the directory of the cold groups' live-core directories.
func (l Layout) CoreGroups() string { return l.Root + "/cores" }

// InstancesOf is where the instances of the task sp live.
func (l Layout) InstancesOf(sp *Spec) string {
	if sp.Standby.Mode == ModeCold {
		return l.GroupInstances(sp.Standby.Group, sp.Name)
	}
	return l.Instances(sp.Name)
}

// Subtrees are the roots of the replication nodes, for
// recipe.Session.EnsureSubtree.
func (l Layout) Subtrees() []recipe.Subtree { return []recipe.Subtree{{Path: l.Root}} }
