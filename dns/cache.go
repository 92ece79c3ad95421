package dns

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// DefaultResync is how often the Cache re-reads every provider even
// without a watch event, so that a change of an ancestor's ACL (which
// fires no watch) is judged again.
const DefaultResync = time.Minute

// CacheOptions configures a Cache.
type CacheOptions struct {
	Zone   string
	Logger *slog.Logger
	// Resync: see DefaultResync (the default).
	Resync time.Duration
	// retryDelay is the wait after a failed read; default a second.
	retryDelay time.Duration
}

// Cache is a watched copy of the registry: every list and provider it
// read carries a watch, and a fired watch makes it re-read that domain
// (and only the providers that changed), then publish a new Table. A
// change is thus served one watch round trip after it is made.
//
// While the session is not connected, or a re-read after a reconnect has
// not finished, the Cache is stale: its Table is still served, and Stale
// and Age say so (logs and metrics show it). A Cache that never loaded
// has a Table that is not Loaded: the server answers SERVFAIL from it
// rather than NXDOMAIN it cannot know.
type Cache struct {
	s    *recipe.Session
	opts CacheOptions
	zone string // canonical
	log  *slog.Logger

	table  atomic.Pointer[Table]
	stale  atomic.Bool
	synced atomic.Int64 // unix ns of the last read that left nothing dirty; 0: never
	loads  atomic.Int64 // tables published
	// changed is closed and replaced at every table published.
	changedMu sync.Mutex
	changed   chan struct{}

	kick chan struct{}

	mu         sync.Mutex
	dirtyNames bool
	dirty      map[Name]map[string]bool // domain -> dirty providers ("" : the domain's lists)
	all        bool                     // re-read every provider (a reconnect, a resync)
	domains    map[Name]*domainCache
}

type domainCache struct {
	state  *readState
	status ServiceStatus
	entry  *entry // its answers; nil outside the zone
}

// NewCache returns a Cache of the registry on s; Run fills it.
func NewCache(s *recipe.Session, opts CacheOptions) *Cache {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.retryDelay <= 0 {
		opts.retryDelay = time.Second
	}
	c := &Cache{s: s, opts: opts, zone: mdns.CanonicalName(opts.Zone), log: opts.Logger, kick: make(chan struct{}, 1), changed: make(chan struct{}),
		dirty: map[Name]map[string]bool{}, domains: map[Name]*domainCache{}, dirtyNames: true}
	c.table.Store(emptyTable(opts.Zone))
	c.stale.Store(true)
	return c
}

// Table is the current answer table.
func (c *Cache) Table() *Table { return c.table.Load() }

// Stale reports whether the table may be behind the tree.
func (c *Cache) Stale() bool { return c.stale.Load() }

// Age is how long ago the cache was last known to match the tree; 0
// while it does, -1 if it never did.
func (c *Cache) Age() time.Duration {
	ns := c.synced.Load()
	switch {
	case ns == 0:
		return -1
	case !c.stale.Load():
		return 0
	}
	return time.Since(time.Unix(0, ns))
}

// Changed returns a channel closed at the next table published.
func (c *Cache) Changed() <-chan struct{} {
	c.changedMu.Lock()
	defer c.changedMu.Unlock()
	return c.changed
}

// Services are the statuses the current table was built from.
func (c *Cache) Services() []ServiceStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servicesLocked()
}

func (c *Cache) servicesLocked() []ServiceStatus {
	out := make([]ServiceStatus, 0, len(c.domains))
	for _, n := range slices.SortedFunc(maps.Keys(c.domains), func(a, b Name) int { return strings.Compare(a.String(), b.String()) }) {
		out = append(out, c.domains[n].status)
	}
	return out
}

func (c *Cache) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Cache) markDomain(n Name, provider string) {
	c.mu.Lock()
	if c.dirty[n] == nil {
		c.dirty[n] = map[string]bool{}
	}
	c.dirty[n][provider] = true
	c.mu.Unlock()
	c.wake()
}

func (c *Cache) markNames() {
	c.mu.Lock()
	c.dirtyNames = true
	c.mu.Unlock()
	c.wake()
}

// markAll asks for a re-read of everything.
func (c *Cache) markAll() {
	c.mu.Lock()
	c.dirtyNames, c.all = true, true
	c.mu.Unlock()
	c.wake()
}

// Run keeps the cache until ctx ends; it returns nil then.
func (c *Cache) Run(ctx context.Context) error {
	w := newWatchSet(c.markDomain, c.markNames)
	defer w.stop()
	unlisten := c.s.Listen(func(st recipe.State) {
		switch {
		case st.Connected():
			c.markAll()
		default:
			if !c.stale.Swap(true) {
				c.log.Warn("coordination session "+st.String()+": serving the cached names, stale until it is back", "loaded", c.Table().Loaded())
			}
		}
	})
	defer unlisten()
	c.wake() // the first read
	resync := time.NewTicker(c.opts.Resync)
	defer resync.Stop()
	var retry <-chan time.Time
	lastErr := "" // the failure last logged: one line per new reason, not per retry
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-resync.C:
			c.markAll()
			continue
		case <-retry:
			retry = nil
		}
		err := c.refresh(ctx, w)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if err.Error() != lastErr {
				c.log.Warn("cannot read the service registry; serving the cached names, stale", "err", err, "age", c.Age().Round(time.Millisecond))
				lastErr = err.Error()
			}
			c.stale.Store(true)
			retry = time.After(c.opts.retryDelay)
		default:
			lastErr = ""
		}
	}
}

// refresh re-reads what is dirty and publishes the new table. What it
// could not read stays dirty.
func (c *Cache) refresh(ctx context.Context, w *watchSet) error {
	if st := c.s.State(); !st.Connected() {
		return fmt.Errorf("session %s", st)
	}
	c.mu.Lock()
	names, all := c.dirtyNames, c.all
	c.dirtyNames, c.all = false, false
	dirty := c.dirty
	c.dirty = map[Name]map[string]bool{}
	c.mu.Unlock()
	restore := func() {
		c.mu.Lock()
		c.dirtyNames = c.dirtyNames || names
		c.all = c.all || all
		for n, ps := range dirty {
			if c.dirty[n] == nil {
				c.dirty[n] = map[string]bool{}
			}
			maps.Copy(c.dirty[n], ps)
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	known := slices.Collect(maps.Keys(c.domains))
	c.mu.Unlock()
	if names {
		listed, err := listNames(ctx, c.s, w)
		if err != nil {
			restore()
			return err
		}
		for _, n := range listed {
			if !slices.Contains(known, n) && dirty[n] == nil {
				dirty[n] = map[string]bool{}
			}
		}
		c.mu.Lock()
		for _, n := range known {
			if !slices.Contains(listed, n) {
				delete(c.domains, n)
				delete(dirty, n)
			}
		}
		c.mu.Unlock()
		known = listed
	}
	if all {
		for _, n := range known {
			if dirty[n] == nil {
				dirty[n] = map[string]bool{}
			}
		}
	}
	for n, ps := range dirty {
		c.mu.Lock()
		dc := c.domains[n]
		c.mu.Unlock()
		var prev *readState
		if dc != nil && !all {
			prev = &readState{providers: dc.state.providers, stamps: dc.state.stamps, dirty: ps}
		}
		d, next, err := readDomain(ctx, c.s, n, prev, w, false, time.Time{})
		if err != nil {
			restore()
			return err
		}
		st := d.status(n)
		for _, a := range st.Addresses {
			if a.Refused != "" && (dc == nil || !refusedBefore(dc.status, a)) {
				c.log.Error("refusing to serve an address", "name", n.String(), "addr", a.Addr, "why", a.Refused)
			}
		}
		c.mu.Lock()
		c.domains[n] = &domainCache{state: next, status: st, entry: newEntry(c.zone, st)}
		delete(dirty, n)
		c.mu.Unlock()
	}
	c.publish()
	c.mu.Lock()
	clean := !c.dirtyNames && !c.all && len(c.dirty) == 0
	c.mu.Unlock()
	if clean && c.s.State().Connected() {
		c.synced.Store(time.Now().UnixNano())
		if c.stale.Swap(false) && c.loads.Load() > 1 {
			c.log.Info("DNS cache is fresh again")
		}
	}
	return nil
}

func refusedBefore(prev ServiceStatus, a AddressStatus) bool {
	for _, p := range prev.Addresses {
		if p.Addr == a.Addr {
			return p.Refused == a.Refused
		}
	}
	return false
}

// publish builds the table of the current entries and makes it current.
func (c *Cache) publish() {
	c.mu.Lock()
	entries := make([]*entry, 0, len(c.domains))
	for _, dc := range c.domains {
		entries = append(entries, dc.entry)
	}
	c.mu.Unlock()
	n := c.loads.Add(1)
	t := tableOf(c.zone, entries, uint32(n))
	c.table.Store(t)
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
}
