package watch

import (
	"fmt"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// Kind is the way a session watches a path.
type Kind uint8

// Watch kinds. exists and getData both register Data, as ZooKeeper's server
// does; only clients distinguish "exist" watches from data watches.
const (
	Data Kind = iota + 1
	Child
	Persistent
	PersistentRecursive
)

var kindNames = [...]string{Data: "data", Child: "child", Persistent: "persistent", PersistentRecursive: "persistentRecursive"}

// String returns the kind's name, for logs and test failures.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= Data && k <= PersistentRecursive }

// kinds is a set of Kind, one bit per kind: what one session holds on one path.
type kinds uint8

func (k Kind) set() kinds { return 1 << (k - 1) }

const (
	dataTable  = kinds(1<<(Data-1) | 1<<(Persistent-1) | 1<<(PersistentRecursive-1))
	childTable = kinds(1<<(Child-1) | 1<<(Persistent-1))
	oneShot    = kinds(1<<(Data-1) | 1<<(Child-1))
	recursive  = kinds(1 << (PersistentRecursive - 1))
	allKinds   = dataTable | childTable
)

func (s kinds) has(k Kind) bool { return s&k.set() != 0 }

// ValidWatcherType reports whether t is a WatcherType that ZooKeeper 3.8
// understands in removeWatches and checkWatches (WatcherChildren,
// WatcherData, WatcherAny). A 3.8 server answers MarshallingError for any
// other value, not NoWatcher; Remove and Has return false for them.
func ValidWatcherType(t int32) bool {
	return watcherKinds(t) != 0
}

// watcherKinds is the set of kinds a removeWatches or checkWatches of type t
// concerns, or 0 for an unknown type.
func watcherKinds(t int32) kinds {
	switch t {
	case proto.WatcherChildren:
		return Child.set()
	case proto.WatcherData:
		return Data.set()
	case proto.WatcherAny:
		return allKinds
	}
	return 0
}

// triggerKinds returns, for an event type, the kinds that fire at the
// event's own path and the one-shot kinds that firing consumes.
func triggerKinds(typ proto.EventType) (fire, consume kinds) {
	persistent := Persistent.set() | PersistentRecursive.set()
	switch typ {
	case proto.EventNodeCreated, proto.EventNodeDataChanged:
		return Data.set() | persistent, Data.set()
	case proto.EventNodeDeleted:
		return oneShot | persistent, oneShot
	case proto.EventNodeChildrenChanged:
		// A recursive watch ignores child-list changes: the matching
		// NodeCreated/NodeDeleted of the child already told it.
		return Child.set() | Persistent.set(), Child.set()
	}
	return 0, 0
}
