package dns

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// schemaVersion is the "version" of every document this package writes.
const schemaVersion = 1

// Limits of a provider's document.
const (
	MaxWeight    = 65535 // SRV's weight field
	maxMeta      = 16
	maxMetaBytes = 1024
	maxDoc       = 4096 // bytes of any node's data this package decodes
)

// Provider is the data of a provider node: what a provider registered.
type Provider struct {
	Version int    `json:"version"`
	Addr    string `json:"addr"`
	// Weight is the address's share under the weighted strategy and its
	// SRV weight; default 1.
	Weight int `json:"weight"`
	// Meta are key=value pairs served as TXT records.
	Meta map[string]string `json:"meta,omitempty"`
	// TTL, when set, says the node is kept alive by heartbeats at least
	// this often; zero: by the registering process's session.
	TTL time.Duration `json:"ttl,omitempty"`
	// Check is an active health check the Scanner runs; none when nil.
	Check *Check `json:"check,omitempty"`
	// By is the registering identity and host, for operators.
	By string `json:"by,omitempty"`
}

// Check is an active health check: a TCP connect to the address, or an
// HTTP GET of Path on it that must answer 2xx or 3xx.
type Check struct {
	Kind string `json:"kind"` // "tcp" or "http"
	Path string `json:"path,omitempty"`
}

// ParseCheck parses --check: "tcp", or "http" with an optional path
// ("http:/healthz"). "" is no check.
func ParseCheck(s string) (*Check, error) {
	switch {
	case s == "":
		return nil, nil
	case s == "tcp":
		return &Check{Kind: "tcp"}, nil
	case s == "http":
		return &Check{Kind: "http", Path: "/"}, nil
	case strings.HasPrefix(s, "http:/"):
		p := strings.TrimPrefix(s, "http:")
		if strings.ContainsAny(p, " \r\n") {
			return nil, fmt.Errorf("%w: check %q: the path has a space or a line break", ErrInvalidName, s)
		}
		return &Check{Kind: "http", Path: p}, nil
	}
	return nil, fmt.Errorf("%w: check %q: want tcp, http or http:/path", ErrInvalidName, s)
}

// ParseMeta parses key=value pairs.
func ParseMeta(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: meta %q: want key=value", ErrInvalidName, kv)
		}
		m[k] = v
	}
	return m, nil
}

// validate checks p as registered for addr.
func (p *Provider) validate(addr netip.AddrPort) error {
	if p.Weight == 0 {
		p.Weight = 1
	}
	switch {
	case p.Addr != addr.String():
		return fmt.Errorf("%w: provider document names %q, its node %q", ErrInvalidName, p.Addr, addr)
	case p.Weight < 0 || p.Weight > MaxWeight:
		return fmt.Errorf("%w: weight %d: want 1 to %d", ErrInvalidName, p.Weight, MaxWeight)
	case len(p.Meta) > maxMeta:
		return fmt.Errorf("%w: %d meta pairs: at most %d", ErrInvalidName, len(p.Meta), maxMeta)
	case p.TTL < 0:
		return fmt.Errorf("%w: ttl %v: must not be negative", ErrInvalidName, p.TTL)
	}
	n := 0
	for k, v := range p.Meta {
		n += len(k) + len(v) + 1
	}
	if n > maxMetaBytes {
		return fmt.Errorf("%w: meta of %d bytes: at most %d", ErrInvalidName, n, maxMetaBytes)
	}
	if p.Check != nil && p.Check.Kind != "tcp" && p.Check.Kind != "http" {
		return fmt.Errorf("%w: check kind %q: want tcp or http", ErrInvalidName, p.Check.Kind)
	}
	return nil
}

// decodeProvider decodes and checks the data of the provider node of addr.
func decodeProvider(addr netip.AddrPort, data []byte) (Provider, error) {
	var p Provider
	if len(data) > maxDoc {
		return p, fmt.Errorf("provider %s: %d bytes: at most %d", addr, len(data), maxDoc)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("provider %s: %w", addr, err)
	}
	if err := p.validate(addr); err != nil {
		return p, fmt.Errorf("provider %s: %w", addr, err)
	}
	return p, nil
}

// Mark is the data of a blocked or unhealthy node: who, when, why.
type Mark struct {
	Version int       `json:"version"`
	By      string    `json:"by,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Time    time.Time `json:"time"`
}

func decodeMark(data []byte) Mark {
	var m Mark
	if len(data) <= maxDoc {
		_ = json.Unmarshal(data, &m) // a mark counts by its existence; its data only explains it
	}
	return m
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("dns: encode %T: %v", v, err)) // only our own plain types
	}
	return b
}

// AddressStatus is one registered address as every reader shows it.
type AddressStatus struct {
	Addr   string            `json:"addr"`
	Weight int               `json:"weight"`
	Meta   map[string]string `json:"meta,omitempty"`
	// Mode is "session" (ephemeral) or "heartbeat".
	Mode string        `json:"mode"`
	TTL  time.Duration `json:"ttl,omitempty"`
	// HeartbeatAge is the age of the last heartbeat when read, on the
	// coordination server's clock (heartbeat mode; -1 if none yet).
	HeartbeatAge time.Duration `json:"heartbeatAge,omitempty"`
	Check        *Check        `json:"check,omitempty"`
	Healthy      bool          `json:"healthy"`
	// Unhealthy is the Scanner's mark, when Healthy is false.
	Unhealthy *Mark `json:"unhealthy,omitempty"`
	Blocked   *Mark `json:"blocked,omitempty"`
	// Refused says why the address is not acted on (an untrusted or
	// malformed node); empty when it is.
	Refused string `json:"refused,omitempty"`
	By      string `json:"by,omitempty"`
}

// Served reports whether DNS answers with the address: the one rule.
func (a AddressStatus) Served() bool { return a.Refused == "" && a.Healthy && a.Blocked == nil }

// ServiceStatus is one domain and its addresses, sorted by address.
type ServiceStatus struct {
	Name
	Addresses []AddressStatus `json:"addresses"`
	// Served is the number of addresses DNS answers with.
	Served int `json:"served"`
}

// served returns the addresses of s that DNS answers with.
func (s ServiceStatus) served() []AddressStatus {
	var out []AddressStatus
	for _, a := range s.Addresses {
		if a.Served() {
			out = append(out, a)
		}
	}
	return out
}

// domainRead is what one read of a domain's directories found, from
// which its ServiceStatus is derived (status): shared by Admin and Cache.
type domainRead struct {
	providers map[string]providerRead // by address
	blocked   map[string]Mark
	unhealthy map[string]Mark
	// refused says why the whole domain is not acted on.
	refused string
}

type providerRead struct {
	p         Provider
	ephemeral bool
	err       error // malformed or untrusted
	hbAge     time.Duration
	hbKnown   bool
}

// status derives a domain's ServiceStatus from what was read.
func (d domainRead) status(n Name) ServiceStatus {
	st := ServiceStatus{Name: n, Addresses: []AddressStatus{}}
	for _, addr := range slices.Sorted(maps.Keys(d.providers)) {
		pr := d.providers[addr]
		a := AddressStatus{Addr: addr, Weight: pr.p.Weight, Meta: pr.p.Meta, TTL: pr.p.TTL, Check: pr.p.Check, By: pr.p.By, Healthy: true, Mode: "session"}
		if !pr.ephemeral {
			a.Mode = "heartbeat"
			a.HeartbeatAge = -1
			if pr.hbKnown {
				a.HeartbeatAge = pr.hbAge
			}
		}
		if m, ok := d.unhealthy[addr]; ok {
			a.Healthy, a.Unhealthy = false, &m
		}
		if m, ok := d.blocked[addr]; ok {
			a.Blocked = &m
		}
		switch {
		case d.refused != "":
			a.Refused = d.refused
		case pr.err != nil:
			a.Refused = pr.err.Error()
		}
		if a.Served() {
			st.Served++
		}
		st.Addresses = append(st.Addresses, a)
	}
	return st
}
