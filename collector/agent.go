package collector

import (
	"context"
	"errors"
	"sync"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// AgentConfig is one `shepherd collector` process: a collector and,
// with Assign, a candidate assigner, over one session.
type AgentConfig struct {
	Collector Config
	Assign    bool
	Assigner  AssignerConfig
}

// RunAgent runs the collector (and the assigner candidate) on s until
// ctx ends, then returns nil; or returns the first error that stops one
// of them. The caller owns s, which other parts of its process may share.
func RunAgent(ctx context.Context, s *recipe.Session, cfg AgentConfig) error {
	log := cfg.Collector.Logger
	c, err := New(s, cfg.Collector)
	if err != nil {
		return err
	}
	var a *Assigner
	if cfg.Assign {
		ac := cfg.Assigner
		if ac.Name == "" {
			ac.Name = cfg.Collector.Name
		}
		if ac.Logger == nil {
			ac.Logger = log
		}
		if a, err = NewAssigner(s, ac); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = c.Run(ctx)
		cancel()
	}()
	if a != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[1] = a.Run(ctx)
			cancel()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
