package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// MemEngine is an in-memory Engine shared by the cores of a test: a source
// log of numbered events and a target that counts how often each event
// was applied, with the checkpoint and epoch fence a real target keeps.
// Event i's position is {memFile, i}: the position after it is i+1.
//
// It is exported for the tests of other packages (ctl, the console, the
// monitor) that need cores running real tasks without MySQL, as
// hashicorp/raft exports its in-memory transport; Shepherd itself never
// uses it.
type MemEngine struct {
	mu         sync.Mutex
	events     int            // the source holds events 0..events-1
	applied    []int          // the target: times each event was applied
	cp         Checkpoint     // the target's checkpoint
	hasCP      bool           // a checkpoint was ever committed
	down       bool           // the target is unreachable: Open and commits fail
	poison     int            // the event whose apply fails for good; -1 for none
	batch      int            // events per commit
	delay      time.Duration  // per commit
	running    map[string]int // owner → Runs applying now
	maxRunning int            // most Runs applying at once, over all owners
	fenced     int            // commits refused by the epoch fence
	opens      int
	// zombie makes Runs ignore their context, as a process that does not
	// notice its session is gone: only the fence stops them.
	zombie map[string]bool // owner host prefix → zombie
	// dead makes Runs of these owners stop at once without applying, as
	// a process killed in the middle of its work.
	dead map[string]bool
	// froms records where each Run was asked to start, by owner, in
	// order; lastBy the last position each owner committed.
	froms  []ownerPos
	lastBy map[string]Position
	// handovers are the gaps between the last commit of one owner and
	// the first of the next, for benchmarks of hand-over time.
	handovers   []time.Duration
	lastOwner   string
	lastOwnerAt time.Time
	// sources are the probes of source candidates by host:port; a
	// candidate not set is a reachable primary.
	sources map[string]SourceHealth
	opened  []string // the source of each Open, in order
}

// SetSource sets what probes of the source candidate addr find: h's
// Addr is set to addr.
func (e *MemEngine) SetSource(addr string, h SourceHealth) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sources == nil {
		e.sources = map[string]SourceHealth{}
	}
	h.Addr = addr
	e.sources[addr] = h
}

// ProbeSource is Engine.ProbeSource: what SetSource set for e's address,
// else a reachable primary.
func (e *MemEngine) ProbeSource(ctx context.Context, ep Endpoint, log *slog.Logger) SourceHealth {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.sources[ep.Addr()]; ok {
		return h
	}
	return SourceHealth{Addr: ep.Addr(), Server: "mem:" + ep.Addr(), LogBin: true, LogReplicaUpdates: true, GTID: memEverything}
}

// OpenedSources returns the source address of every Open so far, in
// order.
func (e *MemEngine) OpenedSources() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.opened...)
}

type ownerPos struct {
	owner string
	pos   Position
}

const memFile = "mem-bin.000001"

// memEverything is a GTID state past every memPosition: a candidate
// holding every transaction the source wrote.
const memEverything = "0-1-999999999"

// memPosition is the position before event i: offset i, and the GTID
// state of a MariaDB source that has written events 0..i-1 in domain 0
// as server 1 (sequence numbers from 1).
func memPosition(i int) Position {
	p := Position{File: memFile, Pos: uint32(i)}
	if i > 0 {
		p.GTID = fmt.Sprintf("0-1-%d", i)
	}
	return p
}

var errMemDown = errors.New("memengine: target unreachable")

// NewMemEngine returns an engine whose source holds events events.
func NewMemEngine(events int) *MemEngine {
	return &MemEngine{events: events, applied: make([]int, events), poison: -1, batch: 10,
		delay: 2 * time.Millisecond, running: map[string]int{}, zombie: map[string]bool{}, dead: map[string]bool{},
		lastBy: map[string]Position{}}
}

// AddEvents appends n events to the source.
func (e *MemEngine) AddEvents(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events += n
	e.applied = append(e.applied, make([]int, n)...)
}

// endSoon shortens the source to n events past the target's checkpoint,
// so that a long load ends.
func (e *MemEngine) endSoon(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = min(e.events, int(e.cp.Position.Pos)+n)
	e.applied = e.applied[:e.events]
}

// SetDown makes the target unreachable (Open and commits fail) or
// reachable again.
func (e *MemEngine) SetDown(down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = down
}

// Check verifies the target: every event applied exactly once, up to
// the source's end. It returns how many were applied.
func (e *MemEngine) Check() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	var bad []string
	for i, c := range e.applied {
		if c > 0 {
			n++
		}
		if c > 1 && len(bad) < 10 {
			bad = append(bad, fmt.Sprintf("event %d applied %d times", i, c))
		}
	}
	if len(bad) > 0 {
		return n, fmt.Errorf("duplicates: %v", bad)
	}
	if n != e.events {
		return n, fmt.Errorf("%d of %d events applied (checkpoint %v)", n, e.events, e.cp.Position)
	}
	return n, nil
}

// Open is Engine.Open: a replicator of the in-memory source and target.
func (e *MemEngine) Open(ctx context.Context, sp *Spec, log *slog.Logger) (Replicator, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opens++
	e.opened = append(e.opened, sp.Source.Addr())
	if e.down {
		return nil, fmt.Errorf("connect to target %s:%d: %w", sp.Target.Host, sp.Target.Port, errMemDown)
	}
	return &memRep{e: e}, nil
}

type memRep struct{ e *MemEngine }

func (r *memRep) ResolveStart(ctx context.Context, start string) (Position, error) {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	switch start {
	case StartEarliest:
		return memPosition(0), nil
	case StartCurrent:
		return memPosition(r.e.events), nil
	}
	return Position{}, fmt.Errorf("%w: memengine: start %q unsupported", ErrNonRetryable, start)
}

// memServer is the in-memory source's identity (Position.Server).
const memServer = "mariadb:1"

// Locate is Replicator.Locate for the in-memory source, one server
// without GTIDs: file positions are taken to be of it, another server's
// is refused, and so is a GTID set.
func (r *memRep) Locate(ctx context.Context, p Position) (Position, error) {
	switch {
	case p.File == "":
		return Position{}, fmt.Errorf("%w: memengine: the source has no GTIDs, so it cannot serve %s", ErrPositionNotOnSource, p)
	case p.Server != "" && p.Server != memServer && p.GTID == "":
		return Position{}, fmt.Errorf("%w: memengine: %s is of server %s, the source is %s", ErrPositionNotOnSource, p, p.Server, memServer)
	case p.Server == "":
		p.Server = memServer
	}
	return p, nil
}

func (r *memRep) TargetCheckpoint(ctx context.Context) (Checkpoint, bool, error) {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if r.e.down {
		return Checkpoint{}, false, errMemDown
	}
	return r.e.cp, r.e.hasCP, nil
}

func (r *memRep) ResetEpoch(ctx context.Context) (int64, error) {
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	if r.e.down {
		return 0, errMemDown
	}
	prev := r.e.cp.Epoch
	r.e.cp.Epoch = 0
	return prev, nil
}

func (r *memRep) Close() error { return nil }

// Run applies batches from the later of from and the target checkpoint;
// each commit applies the batch and moves the checkpoint atomically, if
// the stored epoch is not above epoch.
func (r *memRep) Run(ctx context.Context, from Position, epoch int64, owner string, progress func(Progress)) error {
	e := r.e
	zombie := e.isZombie(owner)
	e.mu.Lock()
	e.froms = append(e.froms, ownerPos{owner, from})
	e.running[owner]++
	total := 0
	for _, n := range e.running {
		total += n
	}
	e.maxRunning = max(e.maxRunning, total)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running[owner]--
		e.mu.Unlock()
	}()
	next := int(from.Pos)
	var rows int64
	timer := time.NewTimer(e.delay)
	defer timer.Stop()
	for {
		if !zombie {
			select {
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
		}
		<-timer.C
		timer.Reset(e.delay)
		e.mu.Lock()
		switch {
		case hasPrefix(e.dead, owner):
			e.mu.Unlock()
			return errors.New("memengine: killed")
		case e.down:
			e.mu.Unlock()
			return fmt.Errorf("commit: %w", errMemDown)
		case e.hasCP && e.cp.Epoch > epoch:
			e.fenced++
			cp := e.cp
			e.mu.Unlock()
			return fmt.Errorf("%w: target checkpoint has epoch %d (owner %s), ours is %d", ErrFenced, cp.Epoch, cp.Owner, epoch)
		}
		if e.hasCP && int(e.cp.Position.Pos) > next {
			next = int(e.cp.Position.Pos) // committed by someone else: resume after it
		}
		if next == e.poison {
			e.mu.Unlock()
			// Worded as replication.ApplyError, which SkipEvent reads.
			return fmt.Errorf("%w: target refused statement of source transaction ending at %s:%d: Error 1062: Duplicate entry; statement: UPDATE t SET x=1",
				ErrNonRetryable, memFile, next+1)
		}
		n := 0
		for ; n < e.batch && next < e.events && next != e.poison; n++ {
			e.applied[next]++
			next++
		}
		if n == 0 {
			e.mu.Unlock()
			continue // caught up: poll for more
		}
		now := time.Now()
		if e.lastOwner != "" && e.lastOwner != owner {
			e.handovers = append(e.handovers, now.Sub(e.lastOwnerAt))
		}
		e.lastOwner, e.lastOwnerAt = owner, now
		e.cp = Checkpoint{Position: memPosition(next), Epoch: epoch, Owner: owner, Time: now}
		e.hasCP = true
		e.lastBy[owner] = e.cp.Position
		e.mu.Unlock()
		rows += int64(n)
		progress(Progress{Committed: memPosition(next), Rows: rows})
	}
}

func (e *MemEngine) isZombie(owner string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return hasPrefix(e.zombie, owner)
}

// hasPrefix reports whether set holds a prefix of owner.
func hasPrefix(set map[string]bool, owner string) bool {
	for prefix, on := range set {
		if on && strings.HasPrefix(owner, prefix) {
			return true
		}
	}
	return false
}

func (e *MemEngine) stats() (maxRunning, fenced, opens int, cp Checkpoint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.maxRunning, e.fenced, e.opens, e.cp
}

// takeHandovers returns the hand-over gaps recorded so far and forgets
// them.
func (e *MemEngine) takeHandovers() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.handovers
	e.handovers = nil
	return h
}
