package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// deafEngine is the MySQL engine with replicators of the owners named
// deaf that do not hear their context: a core that has lost its session
// but whose replicator goes on applying. Only the target's epoch fence
// can stop them; what they end with is recorded.
//
// The first replicator opened (the deaf owner's, which leads first) reads
// the source with a server id of its own: with the task's, the source
// would drop its binlog stream as soon as the next owner's connects, and
// the target's fence would not be what stops it.
type deafEngine struct {
	MySQL
	deaf string // owner prefix

	mu     sync.Mutex
	opened bool
	ended  []error // errors of the deaf Runs, in order
}

func (e *deafEngine) Open(ctx context.Context, sp *Spec, log *slog.Logger) (Replicator, error) {
	e.mu.Lock()
	if !e.opened {
		own := *sp
		own.ServerID = 4001
		sp, e.opened = &own, true
	}
	e.mu.Unlock()
	r, err := e.MySQL.Open(ctx, sp, log)
	if err != nil {
		return nil, err
	}
	return &deafReplicator{Replicator: r, e: e}, nil
}

type deafReplicator struct {
	Replicator
	e *deafEngine
}

func (r *deafReplicator) Run(ctx context.Context, from Position, epoch int64, owner string, progress func(Progress)) error {
	if !strings.HasPrefix(owner, r.e.deaf) {
		return r.Replicator.Run(ctx, from, epoch, owner, progress)
	}
	err := r.Replicator.Run(context.WithoutCancel(ctx), from, epoch, owner, progress)
	r.e.mu.Lock()
	r.e.ended = append(r.e.ended, err)
	r.e.mu.Unlock()
	return err
}

func (e *deafEngine) endings() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.ended...)
}

// TestMySQLStaleOwnerFencedByTarget: an owner cut off from the
// coordination server whose replicator does not stop goes on applying
// until the new owner claims the target's checkpoint with a larger epoch;
// its next commit is then refused (ErrFenced) and nothing is applied
// twice.
func TestMySQLStaleOwnerFencedByTarget(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("fence")
		createWorkloadSchema(t, db, source, target)
		task := "fence_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))
		eng := &deafEngine{deaf: "a-"}

		_, chroot, _ := cutChroot(connect)
		p := newPartition(t, tg.Addr)
		startCoreOn(t, dial(t, p.Addr()+chroot, testSessionTimeout), "a", eng, func(c *Config) { c.Tasks = []string{task} })
		waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		startCore(t, connect, "b", eng, func(c *Config) { c.Tasks = []string{task} })

		// The load goes on until a has been fenced: an idle stale owner
		// commits nothing, so nothing would fence it.
		loadCtx, stopLoad := context.WithCancel(ctx)
		defer stopLoad()
		loaded := make(chan error, 1)
		go func() { loaded <- load(loadCtx, source.DB(t), db, 0, 2_000_000, 100) }()
		coordtest.WaitFor(t, 60*time.Second, "a to apply some", func() error {
			var n int
			if err := target.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil || n < 2000 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		})
		p.Partition()
		next := waitOwner(t, a, task, "b", StateRunning, 30*time.Second)
		coordtest.WaitFor(t, 30*time.Second, "a's replicator to be fenced", func() error {
			ended := eng.endings()
			if len(ended) == 0 {
				return errors.New("a's replicator still runs")
			}
			if !errors.Is(ended[0], ErrFenced) {
				return fmt.Errorf("a's replicator ended with %v, want ErrFenced", ended[0])
			}
			return nil
		})
		if owner, _, _, err := targetCheckpoint(ctx, target.DB(t), task); err != nil || owner != next.Name {
			t.Errorf("target checkpoint owner %q, %v; want %s", owner, err, next.Name)
		}
		p.Heal()
		stopLoad()
		if err := <-loaded; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 90*time.Second)
	})
}
