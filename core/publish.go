package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// publisher writes an instance's state into its instance node. Only the
// instance writes its own node, so writes are unconditional; a node gone
// means the session is, and the write reports ErrFenced.
type publisher struct {
	s       *recipe.Session
	log     *slog.Logger
	node    string
	observe func(state string) // told every state set

	mu sync.Mutex // serialises writes and guards st
	st InstanceState
}

// publishTimeout bounds one state write: state is informative, and a
// write stuck behind a suspended connection must not hold up the task.
const publishTimeout = 3 * time.Second

func newPublisher(s *recipe.Session, log *slog.Logger, node string, base InstanceState, observe func(string)) *publisher {
	return &publisher{s: s, log: log, node: node, st: base, observe: observe}
}

// set changes the state (and its Since if the state or the error
// changes) with edit, and writes it.
func (p *publisher) set(ctx context.Context, edit func(st *InstanceState)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.st
	edit(&p.st)
	now := time.Now().UTC()
	if p.st.State != before.State || p.st.Error != before.Error {
		p.st.Since = now
	}
	p.st.Updated = now
	p.observe(p.st.State)
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	_, err := p.s.Set(ctx, p.node, p.st.Marshal(), -1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: instance node %s is gone (session lost)", ErrFenced, p.node)
	case err != nil:
		p.log.Debug("instance state not written", "node", p.node, "err", err)
		return err
	}
	return nil
}
