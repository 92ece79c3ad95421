package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// maxFanoutRounds bounds watch-fanout in count; Duration bounds it in
	// time.
	maxFanoutRounds = 10_000
	// notifyTimeout is how long a watcher waits for its notification
	// before the round is declared failed.
	notifyTimeout = 30 * time.Second
)

// errWrongEvent is returned when a watch fires with an unexpected event.
var errWrongEvent = errors.New("unexpected watch event")

// runWatchFanout arms a data watch on one znode from each of Watchers
// sessions, changes the znode once, and times how long until every
// session has its notification; then it re-arms and repeats. Result.Ops
// counts notifications; P50/P99 are of the per-round time until the last
// watcher was notified.
func runWatchFanout(parent context.Context, e *env) (Result, error) {
	node := e.root + "/watched"
	if _, err := e.conns[0].Create(node, e.value, 0, openACL); err != nil {
		return Result{}, fmt.Errorf("bench: %s: create %s: %w", e.name, node, err)
	}
	watchers, err := connectAll(parent, e.o.Addr, e.o.Watchers, e.log)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w (a ZooKeeper server needs maxClientCnxns=0 for this many)", e.name, err)
	}
	defer closeAll(watchers)

	maxRounds := maxFanoutRounds
	if e.o.Ops > 0 {
		maxRounds = max(1, min(maxRounds, e.o.Ops/len(watchers)))
	}
	lastRec, firstRec := newRecorder(1), newRecorder(2)
	p := newProgress(e.log, "fan-out rounds", maxRounds)
	m, err := e.startMeasured(parent)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(parent, e.o.Duration)
	defer cancel()
	rounds := 0
	for ; rounds < maxRounds && ctx.Err() == nil; rounds++ {
		first, last, err := fanoutRound(e, node, watchers)
		if err != nil {
			return Result{}, fmt.Errorf("bench: %s: round %d: %w", e.name, rounds+1, err)
		}
		firstRec.record(first)
		lastRec.record(last)
		p.add(1)
	}
	if err := e.stopMeasured(m); err != nil {
		return Result{}, err
	}
	if err := parent.Err(); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", e.name, err)
	}
	res := m.result(e.name, rounds*len(watchers), mergeRecorders(lastRec))
	res.Extra["watchers"] = fmt.Sprint(len(watchers))
	res.Extra["rounds"] = fmt.Sprint(rounds)
	res.Extra["first-notify-p50"] = formatDuration(mergeRecorders(firstRec).percentile(0.5))
	return res, nil
}

// fanoutRound arms one watch per session, sets the znode once and returns
// how long after the set the first and the last notification arrived.
func fanoutRound(e *env, node string, watchers []*zk.Conn) (first, last time.Duration, err error) {
	var (
		armed, notified sync.WaitGroup
		arrivals        = make([]time.Time, len(watchers))
		errs            = make([]error, len(watchers))
	)
	armed.Add(len(watchers))
	for i, c := range watchers {
		notified.Go(func() {
			_, _, ch, err := c.GetW(node)
			armed.Done()
			if err != nil {
				errs[i] = fmt.Errorf("watcher %d: getData %s: %w", i, node, err)
				return
			}
			timer := time.NewTimer(notifyTimeout)
			defer timer.Stop()
			select {
			case ev := <-ch:
				arrivals[i] = time.Now()
				if ev.Type != zk.EventNodeDataChanged {
					errs[i] = fmt.Errorf("watcher %d: %w: %v %v", i, errWrongEvent, ev.Type, ev.Err)
				}
			case <-timer.C:
				errs[i] = fmt.Errorf("watcher %d: no notification within %v", i, notifyTimeout)
			}
		})
	}
	armed.Wait()
	// Change the znode even when arming failed somewhere, so that the
	// watchers that did arm are released at once rather than at timeout.
	start := time.Now()
	_, setErr := e.conns[0].Set(node, e.value, -1)
	notified.Wait()
	if err := errors.Join(append(errs, setErr)...); err != nil {
		return 0, 0, err
	}
	first = arrivals[0].Sub(start)
	for _, t := range arrivals {
		d := t.Sub(start)
		first, last = min(first, d), max(last, d)
	}
	return first, last, nil
}
