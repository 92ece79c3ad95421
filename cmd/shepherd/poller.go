package main

import (
	"context"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// newPoller is the cluster read model of a role that reads the whole
// cluster (the console, the monitor), over the role's session.
func newPoller(e env, coreRoot string, interval time.Duration) (*cluster.Poller, error) {
	servers, err := coordhealth.Servers(e.connect)
	if err != nil {
		return nil, err
	}
	r := cluster.NewReader(e.session, cluster.Options{CoreRoot: coreRoot, CoordServers: servers})
	return cluster.NewPoller(r, interval, e.log), nil
}

// withPoller returns run with p polling beside it: p starts with run and
// is stopped, and waited for, when run returns.
func withPoller(p *cluster.Poller, run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Run(ctx) // until ctx ends
		}()
		defer func() { cancel(); <-done }()
		return run(ctx)
	}
}
