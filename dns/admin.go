package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Admin is the administration of the registry: the one read every reader
// uses (Services) and the operator's actions (Block, Unblock). ctl and
// the console call the same methods.
type Admin struct {
	s   *recipe.Session
	now func() time.Time
}

// NewAdmin returns the Admin of the registry on s.
func NewAdmin(s *recipe.Session) *Admin { return &Admin{s: s, now: time.Now} }

// listNames lists the registered names, sorted; an application or
// domain whose node name is not a valid one is skipped (it cannot be
// served). With a watch set it watches the lists.
func listNames(ctx context.Context, s *recipe.Session, w *watchSet) ([]Name, error) {
	var fired func()
	if w != nil {
		fired = w.markNames
	}
	apps, err := w.children(ctx, s, Root, fired)
	if err != nil {
		return nil, err
	}
	var out []Name
	for _, app := range apps {
		if checkLabel(app) != nil {
			continue // _scanner, or a stray node
		}
		domains, err := w.children(ctx, s, path.Join(Root, app), fired)
		if err != nil {
			return nil, err
		}
		for _, d := range domains {
			if n, err := NewName(app, d); err == nil && n.Domain == d {
				out = append(out, n)
			}
		}
	}
	slices.SortFunc(out, func(a, b Name) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Services reads every registered name and its addresses: what ctl, the
// console and the monitor show. Heartbeat ages are on this process's
// clock against the server's mtime.
func (a *Admin) Services(ctx context.Context) ([]ServiceStatus, error) {
	names, err := listNames(ctx, a.s, nil)
	if err != nil {
		return nil, fmt.Errorf("dns: list %s: %w", Root, err)
	}
	out := []ServiceStatus{}
	for _, n := range names {
		d, _, err := readDomain(ctx, a.s, n, nil, nil, true, a.now())
		if err != nil {
			return nil, err
		}
		out = append(out, d.status(n))
	}
	return out, nil
}

// Service reads one name.
func (a *Admin) Service(ctx context.Context, n Name) (ServiceStatus, error) {
	d, _, err := readDomain(ctx, a.s, n, nil, nil, true, a.now())
	if err != nil {
		return ServiceStatus{}, err
	}
	return d.status(n), nil
}

// Block stops DNS from answering with addr under n until Unblock,
// whatever its health: the seed's Controller blocking an address by
// hand. Blocking an address not registered (yet) is allowed. It returns
// the block as it was before (nil if none).
func (a *Admin) Block(ctx context.Context, n Name, addr netip.AddrPort, by, reason string) (before *Mark, err error) {
	what := fmt.Sprintf("block %s in %s", addr, n)
	if err := ensureDirs(ctx, a.s, n, dirBlocked); err != nil {
		return nil, refusal(what, a.s, err)
	}
	m := Mark{Version: schemaVersion, By: by, Reason: reason, Time: a.now().UTC()}
	err = a.s.Retry(ctx, func() error {
		_, err := a.s.Create(ctx, n.blocked(addr), encode(m), zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			data, _, gerr := a.s.Get(ctx, n.blocked(addr))
			if gerr == nil {
				old := decodeMark(data)
				before = &old
			}
			_, err = a.s.Set(ctx, n.blocked(addr), encode(m), -1)
		}
		return err
	})
	if err != nil {
		return before, refusal(what, a.s, err)
	}
	return before, nil
}

// Unblock lifts the block of addr under n; ErrNotBlocked if there is none.
func (a *Admin) Unblock(ctx context.Context, n Name, addr netip.AddrPort) (before *Mark, err error) {
	data, _, err := a.s.Retrying().Get(ctx, n.blocked(addr))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotBlocked, addr, n)
	}
	if err != nil {
		return nil, fmt.Errorf("dns: unblock %s in %s: %w", addr, n, err)
	}
	old := decodeMark(data)
	err = a.s.Retry(ctx, func() error { return a.s.Delete(ctx, n.blocked(addr), -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return &old, refusal(fmt.Sprintf("unblock %s in %s", addr, n), a.s, err)
	}
	return &old, nil
}

// ErrNotBlocked: unblock of an address that is not blocked.
var ErrNotBlocked = errors.New("dns: address not blocked")
