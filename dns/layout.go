package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strconv"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Root is the root of the service registry.
const Root = "/DDNS"

// ScannerPath is the election of the Scanner, below Root; its name is no
// valid application name.
const ScannerPath = Root + "/_scanner"

// The directories below a domain's node.
const (
	dirProviders  = "providers"
	dirHeartbeats = "heartbeats"
	dirBlocked    = "blocked"
	dirUnhealthy  = "unhealthy"
)

// Errors of the registry.
var (
	// ErrInvalidName: an application, domain or address that cannot be
	// one.
	ErrInvalidName = errors.New("dns: invalid name")
	// ErrNotRegistered: no such address under the domain.
	ErrNotRegistered = errors.New("dns: address not registered")
	// ErrNotHeartbeat: a heartbeat for an address registered with a
	// session, which needs none.
	ErrNotHeartbeat = errors.New("dns: address is not heartbeat-registered")
)

// Subtrees are the roots of the nodes this package acts on.
func Subtrees() []recipe.Subtree { return []recipe.Subtree{{Path: Root}} }

// Name is one registered name: an application and one of its domains.
type Name struct {
	App    string `json:"app"`
	Domain string `json:"domain"`
}

// NewName checks app and domain and returns the Name; the domain is
// lower-cased and its trailing dot dropped.
func NewName(app, domain string) (Name, error) {
	if err := checkLabel(app); err != nil {
		return Name{}, fmt.Errorf("%w: application %q: %v", ErrInvalidName, app, err)
	}
	d := strings.ToLower(strings.TrimSuffix(domain, "."))
	if d == "" || len(d) > 253 {
		return Name{}, fmt.Errorf("%w: domain %q: want a DNS name of at most 253 characters", ErrInvalidName, domain)
	}
	for _, l := range strings.Split(d, ".") {
		if err := checkLabel(l); err != nil {
			return Name{}, fmt.Errorf("%w: domain %q: label %q: %v", ErrInvalidName, domain, l, err)
		}
	}
	return Name{App: app, Domain: d}, nil
}

// checkLabel checks one DNS label: letters, digits and inner hyphens, at
// most 63 characters (RFC 1123). Application names are lower case.
func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return errors.New("want 1 to 63 characters")
	}
	for i, c := range l {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(l)-1:
		default:
			return fmt.Errorf("character %q: want lower-case letters, digits and inner hyphens", c)
		}
	}
	return nil
}

// String is "app/domain".
func (n Name) String() string { return n.App + "/" + n.Domain }

// Path is the domain's node.
func (n Name) Path() string { return path.Join(Root, n.App, n.Domain) }

func (n Name) dir(d string) string              { return path.Join(n.Path(), d) }
func (n Name) provider(a netip.AddrPort) string { return path.Join(n.Path(), dirProviders, a.String()) }
func (n Name) heartbeat(a netip.AddrPort) string {
	return path.Join(n.Path(), dirHeartbeats, a.String())
}
func (n Name) blocked(a netip.AddrPort) string { return path.Join(n.Path(), dirBlocked, a.String()) }
func (n Name) unhealthy(a netip.AddrPort) string {
	return path.Join(n.Path(), dirUnhealthy, a.String())
}

// ParseAddr parses a provider's address: an IP literal and a port,
// "10.0.0.1:8080" or "[fd00::1]:8080". Host names are refused: the
// registry maps names to addresses, not to other names.
func ParseAddr(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: address %q: want IP:PORT ([IPv6]:PORT): %v", ErrInvalidName, s, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%w: address %q: %q is not an IP address (host names are not registered)", ErrInvalidName, s, host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: address %q: port %q: want 1 to 65535", ErrInvalidName, s, port)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}
