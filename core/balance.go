package core

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Balancing of a cold-standby group (docs/replication.md, "Balancing a
// cold group"). Every core of a group registers an ephemeral member node
// cores/<group>/<host> holding a CoreMember. Each scan, a core reads the
// members and who owns each task, and from that one picture decides:
//
//   - which unowned tasks it takes (mayTake): below its target, or when
//     no live member is below its own, or when the task has waited two
//     scan intervals, so that balancing never leaves a task unowned;
//   - which of its tasks it hands over (releases): tasks pinned to a live
//     preferred core, and its surplus over its target while a live
//     member is below its own, at most BalanceMoves per scan.
//
// Targets are the fair shares ⌈tasks × capacity / total capacity⌉ or the
// floor of it, the remainder going to the members that hold the most
// already (sticky), so every core computes the same targets from the
// same picture and the group ends within one task of even with the
// fewest moves. Hand-overs are the clean stop of SIGTERM.

// Reasons of a hand-over, the reason label of
// shepherd_core_handovers_total.
const (
	// MoveBalance: the core held more than its share while another live
	// core held less.
	MoveBalance = "balance"
	// MovePinned: the task prefers another core (standby.preferredCores),
	// which is live.
	MovePinned = "pinned"
	// MoveShutdown: the core is stopping (SIGTERM) and hands its tasks to
	// the group.
	MoveShutdown = "shutdown"
)

var moveReasons = []string{MoveBalance, MovePinned, MoveShutdown}

// CoreMember is the data of a core's member node in its group: who it is,
// its weight, and the hand-overs it has started and not yet seen
// completed.
type CoreMember struct {
	Version  int       `json:"version"`
	Host     string    `json:"host"`
	Capacity int       `json:"capacity"`
	Since    time.Time `json:"since"`
	Moves    []Move    `json:"moves,omitempty"`
}

// Move is a hand-over in progress: the task is being stopped here, or
// waits for its new owner's scan.
type Move struct {
	Task   string `json:"task"`
	From   string `json:"from"`
	To     string `json:"to,omitempty"` // the core expected to take it
	Reason string `json:"reason"`
	// Share is the releasing core's target when it decided.
	Share int       `json:"share"`
	Since time.Time `json:"since"`
}

// Marshal encodes the member node's data.
func (m CoreMember) Marshal() []byte {
	data, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("core: marshal member: %v", err)) // plain structs always encode
	}
	return data
}

// ParseCoreMember decodes a member node's data.
func ParseCoreMember(data []byte) (CoreMember, error) {
	var m CoreMember
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("core: member node: %w", err)
	}
	if m.Capacity < 1 {
		m.Capacity = 1
	}
	return m, nil
}

// groupTask is one task of the group as a scan sees it.
type groupTask struct {
	name string
	// owner is the host of the instance first in line, "" if none.
	owner string
	// countable: the task should run (valid spec of this group, desired
	// running) and is not FAILED: it counts towards the shares.
	countable bool
	// preferred is the spec's standby.preferredCores.
	preferred []string
}

// groupView is one scan's picture of a group, from one core's side.
type groupView struct {
	me string
	// counted are the members that count for the shares, with their
	// capacity: present for more than one scan, or gone for less than
	// the grace period (memberTracker).
	counted map[string]int
	// present are the members whose node exists now.
	present map[string]bool
	tasks   []groupTask
	load    map[string]int // countable tasks owned, by counted member
	target  map[string]int // fair share, by counted member
	total   int            // countable tasks, unowned or owned by a counted member
	// tookOver counts the tasks this core took at this scan while at or
	// above its target.
	tookOver int
}

// newGroupView computes loads and targets.
func newGroupView(me string, counted map[string]int, present map[string]bool, tasks []groupTask) *groupView {
	v := &groupView{me: me, counted: counted, present: present, tasks: tasks, load: map[string]int{}}
	for _, t := range tasks {
		if !t.countable {
			continue
		}
		if t.owner == "" {
			v.total++
		} else if _, ok := counted[t.owner]; ok {
			v.total++
			v.load[t.owner]++
		}
	}
	v.target = fairShares(counted, v.load, v.total)
	return v
}

// fairShares splits total tasks over the members by capacity: each gets
// the floor of its quota, and the remainder goes one each to the largest
// fractions, then to those holding the most (so nothing moves to fix a
// tie), then by name.
func fairShares(capacity, load map[string]int, total int) map[string]int {
	sum := 0
	hosts := make([]string, 0, len(capacity))
	for h, c := range capacity {
		sum += c
		hosts = append(hosts, h)
	}
	target := make(map[string]int, len(capacity))
	if sum == 0 {
		return target
	}
	rem := make(map[string]int, len(capacity))
	left := total
	for _, h := range hosts {
		q := total * capacity[h]
		target[h], rem[h] = q/sum, q%sum
		left -= target[h]
	}
	slices.SortFunc(hosts, func(a, b string) int {
		return cmp.Or(cmp.Compare(rem[b], rem[a]), cmp.Compare(load[b], load[a]), cmp.Compare(a, b))
	})
	for i := 0; i < left && i < len(hosts); i++ {
		target[hosts[i]]++
	}
	return target
}

// live reports whether h is a member that counts and is there to take
// tasks.
func (v *groupView) live(h string) bool {
	_, ok := v.counted[h]
	return ok && v.present[h]
}

// deficit is how many tasks the live member h lacks to reach its target.
func (v *groupView) deficit(h string) int {
	if !v.live(h) {
		return 0
	}
	return max(0, v.target[h]-v.load[h])
}

// othersBelow reports whether a live member other than me is below its
// target.
func (v *groupView) othersBelow() bool {
	for h := range v.counted {
		if h != v.me && v.deficit(h) > 0 {
			return true
		}
	}
	return false
}

// livePreferred returns the first live core t prefers, if any.
func (v *groupView) livePreferred(t groupTask) (string, bool) {
	for _, h := range t.preferred {
		if v.live(h) {
			return h, true
		}
	}
	return "", false
}

// mayTake reports whether this core should take the unowned task t now.
// waited says that t has been left unowned at this core's scans for two
// scan intervals: then it is taken whatever the shares, as the cores
// below theirs had their chance.
func (v *groupView) mayTake(t groupTask, waited bool) bool {
	if !t.countable || waited {
		return true
	}
	if slices.Contains(t.preferred, v.me) {
		return true
	}
	if _, ok := v.livePreferred(t); ok {
		return false
	}
	if v.below() {
		return true
	}
	// At its share, a core takes one task per scan, so that the tasks of
	// a core gone are spread over the others' scans rather than all taken
	// by the first to look (which would move them again after the grace).
	return !v.othersBelow() && v.tookOver == 0
}

// below reports whether this core counts and holds less than its target.
func (v *groupView) below() bool {
	_, counted := v.counted[v.me]
	return counted && v.load[v.me] < v.target[v.me]
}

// took records that this core took t, for the decisions that follow in
// the same scan.
func (v *groupView) took(t groupTask) {
	if !t.countable {
		return
	}
	if !v.below() {
		v.tookOver++
	}
	v.load[v.me]++
}

// release is a hand-over this core decided.
type release struct {
	task   string
	to     string
	reason string
}

// heldTask is what a core remembers of a task it runs.
type heldTask struct {
	since time.Time // when this core took it
	// forced: taken because it had waited a whole scan unowned (see
	// mayTake); it is not handed to its preferred core again, which had
	// its chance, so that a preferred core unable to run it causes no
	// endless moves.
	forced bool
}

// releases decides which of this core's tasks it hands over now: tasks
// whose preferred core is live, then its part of the surplus, at most
// limit in all. held are the tasks this core runs; the ones it has held
// longest (least recently moved) go first.
func (v *groupView) releases(limit int, held map[string]heldTask) []release {
	var out []release
	var mine []groupTask
	for _, t := range v.tasks {
		if t.owner != v.me || !t.countable {
			continue
		}
		if slices.Contains(t.preferred, v.me) {
			continue // pinned here: never released for balance
		}
		if h, ok := v.livePreferred(t); ok && !held[t.name].forced {
			if len(out) < limit {
				out = append(out, release{task: t.name, to: h, reason: MovePinned})
			}
			continue
		}
		mine = append(mine, t)
	}
	n := min(v.surplusShare(), limit-len(out), len(mine))
	if n <= 0 {
		return out
	}
	slices.SortFunc(mine, func(a, b groupTask) int {
		return cmp.Or(cmp.Compare(len(a.preferred), len(b.preferred)), held[a.name].since.Compare(held[b.name].since), cmp.Compare(a.name, b.name))
	})
	receivers := v.receivers()
	for i := range n {
		to := ""
		if len(receivers) > 0 {
			to = receivers[i%len(receivers)]
		}
		out = append(out, release{task: mine[i].name, to: to, reason: MoveBalance})
	}
	return out
}

// surplusShare is how many tasks this core should give up for balance:
// its surplus over its target, capped by the part of the live members'
// deficit that falls to it when the over-loaded members, largest surplus
// first, fill the deficits in turn. Every core computes the same split
// from the same picture, so together they move no more than the deficit.
// While unowned tasks wait, they fill the deficits first: nothing moves.
func (v *groupView) surplusShare() int {
	if _, ok := v.counted[v.me]; !ok || !v.present[v.me] {
		return 0
	}
	deficit := 0
	var over []string
	for h := range v.counted {
		deficit += v.deficit(h)
		if v.load[h] > v.target[h] && v.present[h] {
			over = append(over, h)
		}
	}
	for _, t := range v.tasks {
		if t.countable && t.owner == "" {
			deficit--
		}
	}
	slices.SortFunc(over, func(a, b string) int {
		return cmp.Or(cmp.Compare(v.load[b]-v.target[b], v.load[a]-v.target[a]), cmp.Compare(a, b))
	})
	for _, h := range over {
		n := min(v.load[h]-v.target[h], max(deficit, 0))
		if h == v.me {
			return n
		}
		deficit -= n
	}
	return 0
}

// receivers are the live members below their targets, most lacking
// first: whom a hand-over is meant for.
func (v *groupView) receivers() []string {
	var out []string
	for h := range v.counted {
		if v.deficit(h) > 0 {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(v.deficit(b), v.deficit(a)), cmp.Compare(a, b))
	})
	return out
}

// memberTracker gives a core's view of its group's membership
// hysteresis: a member counts once it has been seen at two scans in a
// row (present for one scan), and stops counting only after it has been
// absent for the grace period, so that a core restarting within it
// causes no round of moves among the others.
type memberTracker struct {
	grace time.Duration
	seen  map[string]*memberSeen
}

type memberSeen struct {
	capacity int
	last     time.Time // last scan it was present at
	counted  bool
}

func newMemberTracker(grace time.Duration) *memberTracker {
	return &memberTracker{grace: grace, seen: map[string]*memberSeen{}}
}

// update records the members present at a scan at now, and returns the
// members that count, with their capacity, and those present. self, the
// scanning core, counts as soon as it is present: it knows it is live.
func (mt *memberTracker) update(now time.Time, self string, members map[string]int) (counted map[string]int, present map[string]bool) {
	present = make(map[string]bool, len(members))
	for h, capacity := range members {
		present[h] = true
		s, ok := mt.seen[h]
		if !ok {
			mt.seen[h] = &memberSeen{capacity: capacity, last: now, counted: h == self}
			continue
		}
		s.capacity, s.last, s.counted = capacity, now, true
	}
	counted = map[string]int{}
	for h, s := range mt.seen {
		if !present[h] && now.Sub(s.last) >= mt.grace {
			delete(mt.seen, h)
			continue
		}
		if s.counted {
			counted[h] = s.capacity
		}
	}
	return counted, present
}
