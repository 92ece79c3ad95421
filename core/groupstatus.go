package core

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// GroupStatus is a cold-standby group as operators see it: its live
// cores, the spread of its tasks over them and the hand-overs in
// progress.
type GroupStatus struct {
	Name string `json:"name"`
	// Cores are the live cores (member nodes), by host.
	Cores []GroupCore `json:"cores"`
	// Tasks counts the tasks that should run (desired running, not
	// FAILED): those the shares are made of.
	Tasks int `json:"tasks"`
	// Unowned are the tasks that should run and have no instance now.
	Unowned []string `json:"unowned"`
	// Others are the tasks owned by processes that are not live cores of
	// the group (older versions, a core gone but its session not yet).
	Others map[string]string `json:"others,omitempty"`
	// Moves are the hand-overs in progress, as their cores publish them.
	Moves []Move `json:"moves"`
}

// GroupCore is one live core of a group.
type GroupCore struct {
	Host     string `json:"host"`
	Capacity int    `json:"capacity"`
	// Tasks are the tasks it owns that count towards the shares.
	Tasks []string `json:"tasks"`
	// Share is its fair share of the group's tasks, as the cores compute
	// it when every live core counts.
	Share int `json:"share"`
	// Error says why its member node could not be read.
	Error string `json:"error,omitempty"`
}

// Groups returns the status of every cold-standby group, by name.
func (a *Admin) Groups(ctx context.Context) ([]GroupStatus, error) {
	var names []string
	err := a.retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, a.layout.Groups())
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []GroupStatus{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("core: list groups: %w", err)
	}
	slices.Sort(names)
	out := make([]GroupStatus, 0, len(names))
	for _, n := range names {
		g, err := a.Group(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// LiveCores returns the hosts of the live cores of every cold group that
// has one, by group, each list sorted. Hot-standby cores are not in it:
// they register under the task they serve (Instances), not in a group.
func (a *Admin) LiveCores(ctx context.Context) (map[string][]string, error) {
	var groups []string
	err := a.retry(ctx, func() (err error) {
		groups, _, err = a.s.Children(ctx, a.layout.CoreGroups())
		return err
	})
	out := map[string][]string{}
	if errors.Is(err, zk.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("core: list the groups of live cores: %w", err)
	}
	for _, g := range groups {
		var hosts []string
		err := a.retry(ctx, func() (err error) {
			hosts, _, err = a.s.Children(ctx, a.layout.Cores(g))
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("core: live cores of group %q: %w", g, err)
		}
		if len(hosts) > 0 {
			slices.Sort(hosts)
			out[g] = hosts
		}
	}
	return out, nil
}

// Group returns the status of the cold-standby group name.
func (a *Admin) Group(ctx context.Context, name string) (GroupStatus, error) {
	g := GroupStatus{Name: name, Cores: []GroupCore{}, Unowned: []string{}, Moves: []Move{}}
	if err := checkName(name); err != nil {
		return g, fmt.Errorf("%w: group name: %v", ErrBadConfig, err)
	}
	ms, err := recipe.Members(ctx, a.s, a.layout.Cores(name))
	if err != nil {
		return g, fmt.Errorf("core: group %q: %w", name, err)
	}
	capacity := map[string]int{}
	present := map[string]bool{}
	for _, m := range ms {
		gc := GroupCore{Host: m.Name, Tasks: []string{}}
		cm, err := ParseCoreMember(m.Data)
		if err != nil {
			gc.Error = err.Error()
		}
		gc.Capacity = max(cm.Capacity, 1)
		g.Moves = append(g.Moves, cm.Moves...)
		capacity[m.Name], present[m.Name] = gc.Capacity, true
		g.Cores = append(g.Cores, gc)
	}
	var names []string
	err = a.retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, a.layout.Group(name))
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return g, fmt.Errorf("core: group %q: list tasks: %w", name, err)
	}
	slices.Sort(names)
	tasks := make([]groupTask, 0, len(names))
	for _, n := range names {
		t, err := readGroupTask(ctx, a.s, a.layout, name, n)
		if err != nil {
			return g, fmt.Errorf("core: group %q: %w", name, err)
		}
		tasks = append(tasks, t)
		switch {
		case !t.countable:
		case t.owner == "":
			g.Unowned = append(g.Unowned, n)
		case !present[t.owner]:
			if g.Others == nil {
				g.Others = map[string]string{}
			}
			g.Others[n] = t.owner
		}
	}
	v := newGroupView("", capacity, present, tasks)
	g.Tasks = v.total + len(g.Others)
	for i := range g.Cores {
		gc := &g.Cores[i]
		gc.Share = v.target[gc.Host]
		for _, t := range tasks {
			if t.countable && t.owner == gc.Host {
				gc.Tasks = append(gc.Tasks, t.name)
			}
		}
	}
	return g, nil
}
