package collector

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
)

// reader reads one source. Read returns the complete lines after pos, at
// most max bytes, and the position after them; a line longer than max is
// returned in max-sized pieces. lag is how many bytes of the source are
// known to be left after next (-1 if unknown). A reader keeps no state
// that matters: any reader started at a position continues from it.
type reader interface {
	Read(ctx context.Context, pos Position, max int) (data []byte, next Position, lag int64, err error)
}

// ValidateSource checks a source URI: file:///absolute/glob or
// http(s)://host/path.
func ValidateSource(uri string) error {
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrBadSource, uri, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("%w: %q: file URIs name a local path (file:///path), not host %q", ErrBadSource, uri, u.Host)
		}
		if !filepath.IsAbs(u.Path) {
			return fmt.Errorf("%w: %q: the path must be absolute", ErrBadSource, uri)
		}
		if _, err := filepath.Match(u.Path, ""); err != nil {
			return fmt.Errorf("%w: %q: bad glob: %v", ErrBadSource, uri, err)
		}
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%w: %q: no host", ErrBadSource, uri)
		}
	default:
		return fmt.Errorf("%w: %q: scheme must be file, http or https", ErrBadSource, uri)
	}
	return nil
}

// newReader returns the reader of a valid source URI.
func newReader(uri string, client *http.Client) (reader, error) {
	if err := ValidateSource(uri); err != nil {
		return nil, err
	}
	u, _ := url.Parse(uri)
	if u.Scheme == "file" {
		return &fileReader{glob: u.Path}, nil
	}
	return &httpReader{url: uri, client: client}, nil
}

// completeLines cuts buf after its last newline. If buf holds no newline
// but is full (len == max), all of it is returned: a line longer than
// max is passed on in pieces rather than never.
func completeLines(buf []byte, max int) []byte {
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		return buf[:i+1]
	}
	if len(buf) >= max {
		return buf
	}
	return nil
}
