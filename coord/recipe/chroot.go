package recipe

import (
	"fmt"
	"net"
	"strings"
)

// parseConnect splits a ZooKeeper connect string,
// host:port[,host:port…][/chroot], into its servers and chroot. The chroot
// is "" for none; otherwise it is an absolute path without a trailing
// slash, as the Java client requires.
func parseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := validatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("%w %q: chroot: %v", ErrBadConnectString, connect, err)
		}
	}
	if hosts == "" {
		return nil, "", fmt.Errorf("%w %q: no server (want host:port[,host:port…][/chroot])", ErrBadConnectString, connect)
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return nil, "", fmt.Errorf("%w %q: server %q is not host:port", ErrBadConnectString, connect, h)
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}

// validatePath checks the shape ZooKeeper requires of a path: absolute, no
// trailing slash (except the root), no empty, "." or ".." segment, no NUL.
// The server checks again; checking here names the caller's mistake
// before anything is sent.
func validatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("path is empty")
	case p[0] != '/':
		return fmt.Errorf("path %q is not absolute", p)
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("path %q ends with /", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q contains a NUL byte", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q has an empty, . or .. segment", p)
		}
	}
	return nil
}

// chroot translates paths between the caller's namespace and the server's.
// The zero value is no chroot.
type chroot string

// toServer maps a caller path to the server path.
func (c chroot) toServer(p string) string {
	if c == "" {
		return p
	}
	if p == "/" {
		return string(c)
	}
	return string(c) + p
}

// fromServer maps a server path (a created node, a watch event) back to the
// caller's namespace. Paths outside the chroot, which the server never
// returns for requests made inside it, are returned unchanged.
func (c chroot) fromServer(p string) string {
	if c == "" || !strings.HasPrefix(p, string(c)) {
		return p
	}
	rest := p[len(c):]
	switch {
	case rest == "":
		return "/"
	case rest[0] == '/':
		return rest
	}
	return p // a sibling sharing the prefix, e.g. /app2 under chroot /app
}
