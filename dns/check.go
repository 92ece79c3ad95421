package dns

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// probe runs an active check of addr: a TCP connect, or an HTTP GET of
// the check's path answering 2xx or 3xx (redirects are not followed).
func probe(ctx context.Context, c *Check, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Kind {
	case "tcp":
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	case "http":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+c.Path, nil)
		if err != nil {
			return err
		}
		resp, err := checkClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s: %s", c.Path, resp.Status)
		}
		return nil
	}
	return fmt.Errorf("unknown check kind %q", c.Kind)
}

// checkClient neither follows redirects (a provider's health is its own
// answer) nor keeps connections: each check is a fresh connect.
var checkClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
}
