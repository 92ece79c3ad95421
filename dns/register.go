package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Registration is what a provider registers: its address and how it is
// to be served.
type Registration struct {
	Addr   netip.AddrPort
	Weight int // default 1
	Meta   map[string]string
	// TTL, for RegisterTTL, is how often the provider promises to
	// heartbeat: the Scanner marks it unhealthy after TTL without one.
	TTL   time.Duration
	Check *Check
	// By names the registering process for operators (identity@host).
	By string
}

func (r Registration) provider() (Provider, error) {
	p := Provider{Version: schemaVersion, Addr: r.Addr.String(), Weight: r.Weight, Meta: r.Meta, TTL: r.TTL, Check: r.Check, By: r.By}
	if !r.Addr.IsValid() {
		return p, fmt.Errorf("%w: no address", ErrInvalidName)
	}
	return p, p.validate(r.Addr)
}

// refusal explains a write the ACL refused.
func refusal(what string, s *recipe.Session, err error) error {
	if errors.Is(err, zk.ErrNoAuth) {
		who := "this session's identity " + s.Identity()
		if !s.Secured() {
			who = "a session without a credential"
		}
		return fmt.Errorf("dns: %s: %w: %s may not write %s; registering needs the credential of a trusted writer (--auth-file; docs/security.md)",
			what, err, who, Root)
	}
	return fmt.Errorf("dns: %s: %w", what, err)
}

// ensureDirs creates the domain's directories with the session's ACL.
func ensureDirs(ctx context.Context, s *recipe.Session, n Name, dirs ...string) error {
	return s.Retry(ctx, func() error {
		for _, d := range dirs {
			if err := s.EnsurePath(ctx, n.dir(d)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Member is a session-held registration: the provider node is ephemeral
// and lives as long as the session, registered again on a new session
// (recipe.Join) until Leave.
type Member struct {
	m *recipe.Membership
}

// Register registers r under n for as long as s's session lives: an
// ephemeral provider node, made again on a new session, until Leave.
func Register(ctx context.Context, s *recipe.Session, n Name, r Registration) (*Member, error) {
	r.TTL = 0
	p, err := r.provider()
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("register %s in %s", r.Addr, n)
	if err := ensureDirs(ctx, s, n, dirProviders); err != nil {
		return nil, refusal(what, s, err)
	}
	m, err := recipe.Join(ctx, s, n.dir(dirProviders), r.Addr.String(), encode(p))
	if err != nil {
		return nil, refusal(what, s, err)
	}
	return &Member{m: m}, nil
}

// Leave deletes the registration and stops keeping it.
func (m *Member) Leave(ctx context.Context) error { return m.m.Leave(ctx) }

// RegisterTTL registers r under n as a persistent provider node kept
// alive by heartbeats (Heartbeat) at least every r.TTL, for processes
// that cannot hold a session; it sends the first heartbeat. Registering
// again replaces the provider's document.
func RegisterTTL(ctx context.Context, s *recipe.Session, n Name, r Registration) error {
	if r.TTL <= 0 {
		return fmt.Errorf("%w: register %s with a heartbeat: ttl %v must be positive", ErrInvalidName, r.Addr, r.TTL)
	}
	p, err := r.provider()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("register %s in %s", r.Addr, n)
	if err := ensureDirs(ctx, s, n, dirProviders, dirHeartbeats); err != nil {
		return refusal(what, s, err)
	}
	data := encode(p)
	err = s.Retry(ctx, func() error {
		_, err := s.Create(ctx, n.provider(r.Addr), data, zk.FlagPersistent, nil)
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		_, st, err := s.Get(ctx, n.provider(r.Addr))
		if err != nil {
			return err
		}
		if st.EphemeralOwner != 0 {
			return fmt.Errorf("%w: %s is registered by a session (0x%x); deregister it first", recipe.ErrNodeInTheWay, r.Addr, st.EphemeralOwner)
		}
		_, err = s.Set(ctx, n.provider(r.Addr), data, st.Version)
		return err
	})
	if err != nil {
		return refusal(what, s, err)
	}
	return Heartbeat(ctx, s, n, r.Addr)
}

// Heartbeat records that the heartbeat-registered provider addr of n is
// alive: the heartbeat node's mtime, on the coordination server's clock,
// is what the Scanner judges.
func Heartbeat(ctx context.Context, s *recipe.Session, n Name, addr netip.AddrPort) error {
	what := fmt.Sprintf("heartbeat of %s in %s", addr, n)
	_, st, err := s.Retrying().Get(ctx, n.provider(addr))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: %s in %s (register it with --ttl first)", ErrNotRegistered, addr, n)
	case err != nil:
		return fmt.Errorf("dns: %s: %w", what, err)
	case st.EphemeralOwner != 0:
		return fmt.Errorf("%w: %s in %s is kept by its session", ErrNotHeartbeat, addr, n)
	}
	data := encode(struct {
		Version int       `json:"version"`
		Time    time.Time `json:"time"`
	}{schemaVersion, time.Now().UTC()})
	err = s.Retry(ctx, func() error {
		_, err := s.Set(ctx, n.heartbeat(addr), data, -1)
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.EnsurePath(ctx, n.dir(dirHeartbeats)); err != nil {
				return err
			}
			_, err = s.Create(ctx, n.heartbeat(addr), data, zk.FlagPersistent, nil)
		}
		return err
	})
	if err != nil {
		return refusal(what, s, err)
	}
	return nil
}

// Deregister deletes the provider addr of n and its heartbeat, whichever
// way it was registered. Blocks stay: they are an operator's.
func Deregister(ctx context.Context, s *recipe.Session, n Name, addr netip.AddrPort) error {
	what := fmt.Sprintf("deregister %s from %s", addr, n)
	found := false
	for _, p := range []string{n.heartbeat(addr), n.provider(addr)} {
		err := s.Retry(ctx, func() error { return s.Delete(ctx, p, -1) })
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return refusal(what, s, err)
		default:
			found = found || p == n.provider(addr)
		}
	}
	if !found {
		return fmt.Errorf("%w: %s in %s", ErrNotRegistered, addr, n)
	}
	return nil
}
