package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/scheduler"
)

func snapAt(sec int) *Snapshot { return empty(time.Unix(int64(sec), 0)) }

func TestFixedServesTheSnapshotSetLast(t *testing.T) {
	f := NewFixed(nil)
	if _, err := f.Read(context.Background()); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("Read before Set = %v, want ErrNoSnapshot", err)
	}
	if f.Latest() != nil {
		t.Fatal("Latest before Set is not nil")
	}
	s1, s2 := snapAt(1), snapAt(2)
	f.Set(s1)
	f.Set(s2)
	if got, err := f.Read(context.Background()); got != s2 || err != nil {
		t.Fatalf("Read = %v, %v; want the snapshot set last", got, err)
	}
}

// A subscriber gets the newest snapshot at once, then each new one; one
// that does not keep up skips to the newest and never blocks Set.
func TestSubscribeHandsTheNewestAndSkipsForSlowReaders(t *testing.T) {
	f := NewFixed(snapAt(1))
	ch, cancel := f.Subscribe()
	if s := <-ch; s.ReadAt.Unix() != 1 {
		t.Fatalf("first receive = %v, want the snapshot there was", s.ReadAt)
	}
	for i := 2; i <= 5; i++ {
		f.Set(snapAt(i)) // nobody receives meanwhile: must not block
	}
	if s := <-ch; s.ReadAt.Unix() != 5 {
		t.Fatalf("receive after 4 Sets = %v, want the newest (5)", s.ReadAt.Unix())
	}
	select {
	case s := <-ch:
		t.Fatalf("received %v again: one receive per new snapshot", s.ReadAt.Unix())
	default:
	}
	cancel()
	cancel() // twice is harmless
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
	f.Set(snapAt(6)) // no subscriber left: must not panic on the closed channel
}

func TestSubscribeBeforeAnySnapshotWaitsForTheFirst(t *testing.T) {
	f := NewFixed(nil)
	ch, cancel := f.Subscribe()
	defer cancel()
	select {
	case s := <-ch:
		t.Fatalf("received %v before any Set", s)
	default:
	}
	f.Set(snapAt(7))
	if s := <-ch; s.ReadAt.Unix() != 7 {
		t.Fatalf("got %v", s.ReadAt)
	}
}

func TestSnapshotFindsByName(t *testing.T) {
	s := empty(time.Now())
	s.Tasks = []core.TaskStatus{{Name: "a"}, {Name: "b"}}
	s.Jobs = []scheduler.JobStatus{{Name: "nightly"}}
	s.Collectors = []collector.CollectorInfo{{Name: "c1", Alive: true}}
	if ts, ok := s.Task("b"); !ok || ts.Name != "b" {
		t.Errorf("Task(b) = %v, %v", ts, ok)
	}
	if _, ok := s.Task("z"); ok {
		t.Error("Task(z) found")
	}
	if js, ok := s.Job("nightly"); !ok || js.Name != "nightly" {
		t.Errorf("Job = %v, %v", js, ok)
	}
	if c, ok := s.Collector("c1"); !ok || !c.Alive {
		t.Errorf("Collector = %v, %v", c, ok)
	}
}

// The JSON every reader serves: empty sections are [], not null, and the
// field names are those of cluster-api.md.
func TestSnapshotJSONShowsEmptySectionsAsLists(t *testing.T) {
	b, err := json.Marshal(empty(time.Unix(0, 0).UTC()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tasks":[]`, `"jobs":[]`, `"schedulers":[]`, `"collectors":[]`, `"sources":[]`, `"coord":[]`, `"readAt":"1970-01-01T00:00:00Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), "errors") {
		t.Errorf("JSON %s has errors without any", b)
	}
}

// fakeReader counts reads and is a Watcher whose channel the test fires.
type fakeReader struct {
	reads   atomic.Int64
	changed chan struct{}
	mu      sync.Mutex
	err     error
}

func (r *fakeReader) Read(ctx context.Context) (*Snapshot, error) {
	n := r.reads.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	return snapAt(int(n)), nil
}

func (r *fakeReader) Watch(context.Context) (<-chan struct{}, error) { return r.changed, nil }

// startPoller runs a Poller of r (MinGap 0) until the test ends and
// returns it with a subscription.
func startPoller(t *testing.T, r Reader, interval time.Duration) (*Poller, <-chan *Snapshot) {
	p := NewPoller(r, interval, nil)
	p.MinGap = 0
	ch, unsubscribe := p.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil at the context's end", err)
		}
		unsubscribe()
	})
	return p, ch
}

// next receives the next snapshot within a generous bound.
func next(t *testing.T, ch <-chan *Snapshot) *Snapshot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot within 10s")
		return nil
	}
}

// With an hour's interval, only a watch can cause the second read.
func TestPollerRereadsAtOnceWhenAWatchFires(t *testing.T) {
	r := &fakeReader{changed: make(chan struct{}, 1)}
	p, ch := startPoller(t, r, time.Hour)
	if s := next(t, ch); s.ReadAt.Unix() != 1 {
		t.Fatalf("first snapshot %v", s.ReadAt.Unix())
	}
	if p.Latest() == nil {
		t.Fatal("Latest nil after the first read")
	}
	r.changed <- struct{}{}
	if s := next(t, ch); s.ReadAt.Unix() != 2 {
		t.Fatalf("after the watch fired: snapshot %v, want the second read", s.ReadAt.Unix())
	}
}

// Without a watch firing, the interval alone drives reads.
func TestPollerRereadsOnItsInterval(t *testing.T) {
	_, ch := startPoller(t, &fakeReader{}, time.Millisecond)
	for want := int64(1); want <= 3; want++ {
		if s := next(t, ch); s.ReadAt.Unix() < want {
			t.Fatalf("read %d: snapshot %v", want, s.ReadAt.Unix())
		}
	}
}

// A failing read keeps the last good snapshot as Latest.
func TestPollerKeepsTheLastGoodSnapshotWhenAReadFails(t *testing.T) {
	r := &fakeReader{changed: make(chan struct{}, 1)}
	p, ch := startPoller(t, r, time.Hour)
	good := next(t, ch)
	r.mu.Lock()
	r.err = errors.New("connection lost")
	r.mu.Unlock()
	// Once read 3 starts, read 2 (the failing one) is fully handled.
	r.changed <- struct{}{}
	waitReads(t, r, 2)
	r.changed <- struct{}{}
	waitReads(t, r, 3)
	if p.Latest() != good {
		t.Fatalf("Latest = %v after a failed read, want the last good one", p.Latest())
	}
}

// waitReads waits until r has started n reads.
func waitReads(t *testing.T, r *fakeReader, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.reads.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads after 10s, want %d", r.reads.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// unreadable is a Reader of which nothing can be read.
type unreadable struct{}

func (unreadable) Read(context.Context) (*Snapshot, error) {
	s := snapAt(1)
	s.Errors = map[Section]string{SectionTasks: "connection lost"}
	return s, ErrUnreadable
}

// An unreadable cluster is news: its snapshot, errors and all, is
// published.
func TestPollerPublishesAnUnreadableSnapshot(t *testing.T) {
	_, ch := startPoller(t, unreadable{}, time.Hour)
	if s := next(t, ch); s.Errors[SectionTasks] != "connection lost" {
		t.Fatalf("published %+v, want the snapshot with its errors", s)
	}
}
