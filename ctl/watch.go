package ctl

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

func (r *runner) watchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "print a node's events (with -R: its subtree's) as they happen, until interrupted",
		ArgsUsage: "[-R] [--count N] path",
		Description: `Prints one line per event, as zkCli prints a fired watch
("WatchedEvent state:SyncConnected type:NodeDataChanged path:/a"), or with --json one
{"type","path"} document per line. The first line, "... type:None path:null", says the
watches are in place. Connection changes print as state lines; changes made while the
session was lost are not reported. ZooKeeper watches fire once and are set again after
each event, so changes in quick succession may show as one event.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "R", Usage: "watch the whole subtree, following nodes as they come and go"},
			&cli.IntFlag{Name: "count", Usage: "exit after this many node events (0: never)"},
		},
		Action: r.watch,
	}
}

func (r *runner) watch(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	if c.Int("count") < 0 {
		return usagef("watch: --count %d: want 0 (no limit) or more", c.Int("count"))
	}
	p, err := pathArg(args, false)
	if err != nil {
		return err
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	w := &treeWatcher{r: r, s: s, root: p, recursive: c.Bool("R"), left: c.Int("count")}
	err = w.run()
	if r.ctx.Err() != nil && r.sigs.received() != nil {
		return nil // interrupted: the normal end of a watch
	}
	return err
}

// treeWatcher keeps one-shot watches set on a node (and with -R on its
// descendants) and prints their events. ZooKeeper 3.8's persistent
// watches would be simpler, but go-zookeeper cannot set them.
//
// One goroutine owns everything: it selects over every watch channel,
// prints the event, and sets the watch again before looking at the next
// one. When it prints that a child appeared, the child's watches are
// already set, so a change made after seeing the event is reported.
type treeWatcher struct {
	r         *runner
	s         *recipe.Session
	root      string
	recursive bool
	left      int // node events still to print; 0: no limit
	limited   bool

	nodes  map[string]*watchedNode
	broken bool // a watch could not be set: set them all again on reconnection
}

// watchedNode is a node's outstanding watches: data is an exists watch
// (creation, data change, deletion), children a child watch, nil while
// the node does not exist.
type watchedNode struct {
	data     <-chan zk.Event
	children <-chan zk.Event
}

// errCountReached ends a watch that printed --count events.
var errCountReached = errors.New("count reached")

func (w *treeWatcher) run() error {
	w.limited = w.left > 0
	states := make(chan recipe.State, 64)
	cancel := w.s.Listen(func(st recipe.State) {
		select {
		case states <- st:
		default: // a listener must not block; a flood of state changes loses some lines
		}
	})
	defer cancel()
	if err := w.armAll(); err != nil {
		return err
	}
	w.printState("SyncConnected")
	for {
		cases, index := w.selectCases(states)
		chosen, v, ok := reflect.Select(cases)
		switch {
		case chosen == 0:
			return w.r.ctx.Err()
		case chosen == 1:
			if err := w.onState(v.Interface().(recipe.State)); err != nil {
				return err
			}
			continue
		}
		ref := index[chosen]
		var ev zk.Event
		if ok {
			ev = v.Interface().(zk.Event)
		}
		err := w.onEvent(ref, ev, ok)
		if errors.Is(err, errCountReached) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// watchRef names one watch channel: the node and which of its watches.
type watchRef struct {
	path     string
	children bool
}

// selectCases builds the select: ctx, states, then every watch channel.
func (w *treeWatcher) selectCases(states <-chan recipe.State) ([]reflect.SelectCase, map[int]watchRef) {
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.r.ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(states)},
	}
	index := map[int]watchRef{}
	for p, n := range w.nodes {
		if n.data != nil {
			index[len(cases)] = watchRef{p, false}
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.data)})
		}
		if n.children != nil {
			index[len(cases)] = watchRef{p, true}
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.children)})
		}
	}
	return cases, index
}

// onState prints a connection change, and sets every watch again when a
// new session replaced a lost one (the old session's watches died with it).
func (w *treeWatcher) onState(st recipe.State) error {
	switch st {
	case recipe.StateSuspended:
		w.printState("Disconnected")
	case recipe.StateLost:
		w.printState("Expired")
	case recipe.StateReconnected, recipe.StateConnected:
		if st == recipe.StateConnected || w.broken {
			if err := w.armAll(); err != nil {
				return err
			}
		}
		w.printState("SyncConnected")
	}
	return nil
}

// onEvent handles one fired watch. ok is false when its channel was
// closed, which go-zookeeper does after a NotWatching event.
func (w *treeWatcher) onEvent(ref watchRef, ev zk.Event, ok bool) error {
	n := w.nodes[ref.path]
	if ref.children {
		n.children = nil
	} else {
		n.data = nil
	}
	if !ok || ev.Type == zk.EventNotWatching {
		w.broken = true // the session is gone; onState sets everything again
		return nil
	}
	switch {
	case ref.children && ev.Type == zk.EventNodeDeleted:
		return nil // the exists watch reports the deletion
	case ref.children:
		// Set the child watch (and watch new children) before printing, so
		// that whoever reads the line can rely on them.
		if err := w.armChildren(ref.path, n); err != nil {
			return err
		}
	case ev.Type == zk.EventNodeDeleted && ref.path != w.root:
		n.children = nil
		if err := w.rearmDeleted(ref.path, n); err != nil {
			return err
		}
	default:
		exists, err := w.armData(ref.path, n)
		if err != nil {
			return err
		}
		switch {
		case !exists:
			n.children = nil
		case ev.Type == zk.EventNodeCreated || n.children == nil:
			if err := w.armChildren(ref.path, n); err != nil {
				return err
			}
		}
	}
	return w.print(ev)
}

// rearmDeleted follows a deleted descendant: if it is back already it is
// watched again, else it is forgotten — its parent's child watch, set
// before we got here, reports a re-creation and brings it back.
func (w *treeWatcher) rearmDeleted(p string, n *watchedNode) error {
	var exists bool
	err := w.r.retry(w.s, func(ctx context.Context) (err error) {
		exists, _, err = w.s.Exists(ctx, p)
		return err
	})
	if err != nil {
		return w.armFailed(p, err)
	}
	if !exists {
		delete(w.nodes, p)
		return nil
	}
	return w.add(p)
}

// armAll forgets every watch and sets them again from the root.
func (w *treeWatcher) armAll() error {
	w.nodes = map[string]*watchedNode{}
	w.broken = false
	return w.add(w.root)
}

// add starts watching p (and, with -R, its descendants). A descendant
// that is already gone is not added.
func (w *treeWatcher) add(p string) error {
	n := &watchedNode{}
	exists, err := w.armData(p, n)
	if err != nil {
		return err
	}
	if !exists && p != w.root {
		return nil
	}
	w.nodes[p] = n
	if !exists {
		return nil
	}
	return w.armChildren(p, n)
}

// armData sets n's exists watch and reports whether the node exists.
// A node that does not exist gets an exists watch all the same, which
// fires when it is created; only the root is ever left waiting so.
func (w *treeWatcher) armData(p string, n *watchedNode) (bool, error) {
	var exists bool
	var ch <-chan zk.Event
	err := w.r.retry(w.s, func(ctx context.Context) (err error) {
		exists, _, ch, err = w.s.ExistsW(ctx, p)
		return err
	})
	if err != nil {
		return false, w.armFailed(p, err)
	}
	n.data = ch
	return exists, nil
}

// armChildren sets n's child watch and, with -R, watches new children.
func (w *treeWatcher) armChildren(p string, n *watchedNode) error {
	var names []string
	var ch <-chan zk.Event
	err := w.r.retry(w.s, func(ctx context.Context) (err error) {
		names, _, ch, err = w.s.ChildrenW(ctx, p)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil // deleted meanwhile: its exists watch reports it
	}
	if err != nil {
		return w.armFailed(p, err)
	}
	n.children = ch
	if !w.recursive {
		return nil
	}
	sortJava(names)
	for _, name := range names {
		child := zpath.Join(p, name)
		if _, ok := w.nodes[child]; ok {
			continue
		}
		if err := w.add(child); err != nil {
			return err
		}
	}
	return nil
}

// armFailed decides what a failure to set a watch means: nothing, if the
// connection is down (everything is set again on reconnection), or the
// end of the watch.
func (w *treeWatcher) armFailed(p string, err error) error {
	if recipe.IsRetryable(err) || (errors.Is(err, context.DeadlineExceeded) && w.r.ctx.Err() == nil) {
		w.broken = true
		return nil
	}
	return onPath(p, err)
}

// print writes a node event and counts it against --count.
func (w *treeWatcher) print(ev zk.Event) error {
	if w.r.json {
		writeJSON(w.r.env.Stdout, toJSONEvent(ev))
	} else {
		fmt.Fprintln(w.r.env.Stdout, eventLine(ev))
	}
	if w.limited {
		w.left--
		if w.left == 0 {
			return errCountReached
		}
	}
	return nil
}

// printState writes a connection change as zkCli shows one.
func (w *treeWatcher) printState(state string) {
	if w.r.json {
		writeJSON(w.r.env.Stdout, struct {
			State string `json:"state"`
		}{state})
		return
	}
	fmt.Fprintf(w.r.env.Stdout, "WatchedEvent state:%s type:None path:null\n", state)
}
