package dns

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// maxReadsInFlight bounds the node reads one domain read has sent and
// not yet had answered.
const maxReadsInFlight = 64

// trustStamp identifies the version of a node whose trust was checked:
// a node re-created, rewritten or given another ACL is checked again.
type trustStamp struct {
	czxid, mzxid int64
	aversion     int32
}

// readState is what a reader keeps between reads of one domain so that
// a read re-reads only what changed (the Cache); Admin starts afresh.
type readState struct {
	providers map[string]providerRead
	stamps    map[string]trustStamp
	// dirty are the providers whose data watch fired.
	dirty map[string]bool
}

// readDomain reads domain n: its providers (re-reading only those not in
// prev or marked dirty in it), its blocked and unhealthy marks and, with
// heartbeats, the age of each heartbeat against now. With a watch set it
// leaves a watch on the three directories and on each provider it read,
// where none is outstanding. Trust is checked in one batch for the
// providers read (and for the mark directories, whose entries change
// what is served).
func readDomain(ctx context.Context, s *recipe.Session, n Name, prev *readState, w *watchSet, heartbeats bool, now time.Time) (domainRead, *readState, error) {
	next := &readState{providers: map[string]providerRead{}, stamps: map[string]trustStamp{}, dirty: map[string]bool{}}
	d := domainRead{providers: next.providers, blocked: map[string]Mark{}, unhealthy: map[string]Mark{}}
	children := func(dir string) ([]string, error) {
		return w.children(ctx, s, n.dir(dir), func() { w.markDomain(n, "") })
	}
	provs, err := children(dirProviders)
	if err != nil {
		return d, prev, fmt.Errorf("dns: read %s: %w", n, err)
	}
	marks := map[string]map[string]Mark{dirBlocked: d.blocked, dirUnhealthy: d.unhealthy}
	for _, dir := range []string{dirBlocked, dirUnhealthy} {
		names, err := children(dir)
		if err != nil {
			return d, prev, fmt.Errorf("dns: read %s: %w", n, err)
		}
		for _, a := range names {
			data, _, err := s.Retrying().Get(ctx, path.Join(n.dir(dir), a))
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return d, prev, fmt.Errorf("dns: read %s: %w", n, err)
			}
			if err == nil {
				marks[dir][a] = decodeMark(data)
			}
		}
	}

	// Providers: those known and clean are kept, the others read.
	var toRead []string
	for _, a := range provs {
		if prev != nil && !prev.dirty[a] {
			if pr, ok := prev.providers[a]; ok {
				next.providers[a] = pr
				next.stamps[a] = prev.stamps[a]
				continue
			}
		}
		toRead = append(toRead, a)
	}
	type readResult struct {
		data []byte
		st   *zk.Stat
		err  error
	}
	results := make([]readResult, len(toRead))
	sem := make(chan struct{}, maxReadsInFlight)
	var wg sync.WaitGroup
	for i, a := range toRead {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			p := path.Join(n.dir(dirProviders), a)
			r := &results[i]
			r.data, r.st, r.err = w.get(ctx, s, p, func() { w.markDomain(n, a) })
		})
	}
	wg.Wait()
	var check []string
	for i, a := range toRead {
		r := results[i]
		if errors.Is(r.err, zk.ErrNoNode) {
			continue // gone meanwhile: the directory's watch has fired
		}
		if r.err != nil {
			return d, prev, fmt.Errorf("dns: read %s: provider %s: %w", n, a, r.err)
		}
		pr := providerRead{ephemeral: r.st.EphemeralOwner != 0}
		if addr, err := ParseAddr(a); err != nil {
			pr.err = err
		} else {
			pr.p, pr.err = decodeProvider(addr, r.data)
		}
		next.providers[a] = pr
		next.stamps[a] = trustStamp{r.st.Czxid, r.st.Mzxid, r.st.Aversion}
		check = append(check, path.Join(n.dir(dirProviders), a))
	}
	// Trust: the providers read, and the mark directories when they exist.
	dirs := []string{n.dir(dirBlocked), n.dir(dirUnhealthy)}
	if len(d.blocked) > 0 || len(d.unhealthy) > 0 || len(check) > 0 {
		paths := append(append([]string(nil), check...), dirs...)
		errs := s.CheckTrustedAll(ctx, Root, paths)
		for i, p := range check {
			a := path.Base(p)
			switch err := errs[i]; {
			case errors.Is(err, zk.ErrNoNode):
				delete(next.providers, a)
			case err != nil:
				pr := next.providers[a]
				if pr.err == nil {
					pr.err = err
				}
				next.providers[a] = pr
			}
		}
		for i, dir := range dirs {
			if err := errs[len(check)+i]; err != nil && !errors.Is(err, zk.ErrNoNode) {
				d.refused = fmt.Sprintf("%s: %v", dir, err)
			}
		}
	}
	if heartbeats {
		if err := readHeartbeats(ctx, s, n, next.providers, now); err != nil {
			return d, prev, err
		}
	}
	return d, next, nil
}

// readHeartbeats sets the heartbeat age, against now, of each
// heartbeat-registered provider in provs; the reads are pipelined.
func readHeartbeats(ctx context.Context, s *recipe.Session, n Name, provs map[string]providerRead, now time.Time) error {
	var addrs []string
	for a, pr := range provs {
		if !pr.ephemeral {
			addrs = append(addrs, a)
		}
	}
	stats := make([]*zk.Stat, len(addrs))
	errs := make([]error, len(addrs))
	sem := make(chan struct{}, maxReadsInFlight)
	var wg sync.WaitGroup
	for i, a := range addrs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var ok bool
			ok, stats[i], errs[i] = s.Retrying().Exists(ctx, path.Join(n.dir(dirHeartbeats), a))
			if !ok {
				stats[i] = nil
			}
		})
	}
	wg.Wait()
	for i, a := range addrs {
		if errs[i] != nil {
			return fmt.Errorf("dns: read %s: heartbeat of %s: %w", n, a, errs[i])
		}
		if st := stats[i]; st != nil {
			pr := provs[a]
			pr.hbKnown, pr.hbAge = true, now.Sub(time.UnixMilli(st.Mtime))
			provs[a] = pr
		}
	}
	return nil
}
