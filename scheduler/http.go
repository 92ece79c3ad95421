package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/internal/hostallow"
)

// The HTTP executor: a job with http calls a URL instead of running a
// command, within the same attempts, retries and fencing. A scheduler
// calls only hosts on its --http-allow list (Options.HTTPAllow), empty
// by default: a stored job names the URL, and whoever may write a job
// must not make the schedulers call anything on their network.

// HTTPRequest is Job.HTTP: the request an attempt makes.
type HTTPRequest struct {
	// URL is an http or https URL, without credentials (put those in
	// Headers, which readers see redacted).
	URL string `json:"url" yaml:"url"`
	// Method is GET (the default), POST, PUT, PATCH, DELETE or HEAD.
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// Headers are added to the request; their values are redacted in
	// what readers show, as environment values are.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Body is the request's body.
	Body string `json:"body,omitempty" yaml:"body,omitempty"`
	// SuccessStatus are the response statuses that mean success; empty:
	// any 2xx.
	SuccessStatus []int `json:"successStatus,omitempty" yaml:"successStatus,omitempty"`
}

// Bounds of an HTTP job and of what an attempt keeps of the response.
const (
	maxHTTPURL     = 2048
	maxHTTPHeaders = 32
	maxHTTPHeader  = 8 << 10
	maxHTTPBody    = 64 << 10
	// MaxHTTPResponse bounds the response body an attempt reads: it goes
	// to the run's log file, its tail to Result.Output, and, when the
	// request succeeded, all of it to Result.Data. The rest is not read.
	MaxHTTPResponse = maxResultData
	// DefaultHTTPTimeout bounds an attempt of an HTTP job without a
	// timeout of its own.
	DefaultHTTPTimeout = 10 * time.Minute
	maxRedirects       = 10
)

// ErrHTTPNotAllowed reports an HTTP job whose URL (or a redirect) names a
// host not on the scheduler's --http-allow list. The run fails at once,
// without retries: another attempt would not be allowed either.
var ErrHTTPNotAllowed = errors.New("scheduler: host not in --http-allow")

var httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead}

// check validates the request; the field names what is wrong.
func (h *HTTPRequest) check() (field string, err error) {
	u, err := url.Parse(h.URL)
	switch {
	case h.URL == "":
		return "http.url", errors.New("missing: the URL to call")
	case len(h.URL) > maxHTTPURL:
		return "http.url", fmt.Errorf("%d bytes: at most %d", len(h.URL), maxHTTPURL)
	case err != nil:
		return "http.url", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "http.url", fmt.Errorf("%q: want an http:// or https:// URL", h.URL)
	case u.Hostname() == "":
		return "http.url", fmt.Errorf("%q: no host", h.URL)
	case u.User != nil:
		return "http.url", errors.New("credentials in the URL: put them in http.headers, which readers see redacted")
	case h.Method != "" && !slices.Contains(httpMethods, h.Method):
		return "http.method", fmt.Errorf("%q: want one of %s", h.Method, strings.Join(httpMethods, ", "))
	case len(h.Headers) > maxHTTPHeaders:
		return "http.headers", fmt.Errorf("%d headers: at most %d", len(h.Headers), maxHTTPHeaders)
	case len(h.Body) > maxHTTPBody:
		return "http.body", fmt.Errorf("%d bytes: at most %d", len(h.Body), maxHTTPBody)
	case len(h.SuccessStatus) > 16:
		return "http.successStatus", errors.New("at most 16 statuses")
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h.Headers {
			if !yield(k) {
				return
			}
		}
	}) {
		v := h.Headers[k]
		switch {
		case !headerName(k):
			return "http.headers", fmt.Errorf("%q: not a header name", k)
		case strings.HasPrefix(http.CanonicalHeaderKey(k), "Shepherd-") || slices.Contains([]string{"Host", "Content-Length", "Idempotency-Key"}, http.CanonicalHeaderKey(k)):
			return "http.headers", fmt.Errorf("%s: set by the scheduler", k)
		case len(v) > maxHTTPHeader || strings.ContainsAny(v, "\r\n\x00"):
			return "http.headers", fmt.Errorf("%s: value over %d bytes or with a line break", k, maxHTTPHeader)
		}
	}
	for _, st := range h.SuccessStatus {
		if st < 100 || st > 599 {
			return "http.successStatus", fmt.Errorf("%d: want an HTTP status, 100 to 599", st)
		}
	}
	return "", nil
}

// headerName reports whether k is an HTTP header name (a token).
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// ParseHTTPAllow reads --http-allow: CIDRs, IP addresses and host names;
// the error (ErrInvalidHTTPAllow) quotes the bad entry.
func ParseHTTPAllow(entries []string) (hostallow.List, error) {
	var split []string
	for _, e := range entries {
		for _, x := range strings.Split(e, ",") {
			if x = strings.TrimSpace(x); x != "" {
				split = append(split, x)
			}
		}
	}
	l, err := hostallow.Parse(split)
	if err != nil {
		return hostallow.List{}, fmt.Errorf("%w: --http-allow %s", ErrInvalidHTTPAllow, strings.TrimPrefix(err.Error(), "hostallow: bad entry: "))
	}
	return l, nil
}

// httpClient is the client of HTTP jobs: it follows a redirect only to a
// host on the allow-list, and at most maxRedirects.
func httpClient(allow hostallow.List) *http.Client {
	return &http.Client{
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if !allow.Contains(req.URL.Hostname()) {
				return fmt.Errorf("%w: redirect to host %q", ErrHTTPNotAllowed, req.URL.Hostname())
			}
			return nil
		},
	}
}

// runHTTP makes one attempt's request and reports the response status as
// exit code; data is the response body (bounded) if the status means
// success. final: the attempt must not be retried (a host off the list).
func (sc *Scheduler) runHTTP(ctx context.Context, p *plan, run Run, out io.Writer) (data []byte, status int, final bool, err error) {
	h := p.HTTP
	u, _ := url.Parse(h.URL) // checked by compile
	if !sc.httpAllow.Contains(u.Hostname()) {
		return nil, -1, true, fmt.Errorf("%w: http.url host %q is not in the --http-allow list of scheduler %s: add it there (on every scheduler that may run the job)", ErrHTTPNotAllowed, u.Hostname(), sc.host)
	}
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, strings.NewReader(h.Body))
	if err != nil {
		return nil, -1, true, fmt.Errorf("http: %w", err)
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range runHeaders(run) {
		req.Header.Set(k, v)
	}
	fmt.Fprintf(out, "> %s %s\n", method, h.URL)
	resp, err := sc.httpClient.Do(req)
	if err != nil {
		return nil, -1, errors.Is(err, ErrHTTPNotAllowed), fmt.Errorf("http: %w", err)
	}
	defer resp.Body.Close()
	fmt.Fprintf(out, "< %s\n", resp.Status)
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPResponse+1))
	cut := len(body) > MaxHTTPResponse
	if cut {
		body = body[:MaxHTTPResponse]
	}
	_, _ = out.Write(body)
	if cut {
		fmt.Fprintf(out, "\n=== response body cut at %d bytes\n", MaxHTTPResponse)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if len(h.SuccessStatus) > 0 {
		ok = slices.Contains(h.SuccessStatus, resp.StatusCode)
	}
	switch {
	case rerr != nil:
		return nil, resp.StatusCode, false, fmt.Errorf("http: reading the response: %w", rerr)
	case !ok:
		return nil, resp.StatusCode, false, fmt.Errorf("http: %s %s: %s", method, h.URL, resp.Status)
	}
	return body, resp.StatusCode, false, nil
}

// runHeaders are the headers an HTTP job's request carries about its
// run: the job, run key, attempt, scheduled time, item of a sharded run,
// parameters (values percent-encoded), and an Idempotency-Key the same
// for every attempt of the run (or item), so that the service called can
// tell a retry from a new run.
func runHeaders(run Run) map[string]string {
	key := run.Job + "/" + run.RunKey
	h := map[string]string{
		"Shepherd-Job":            run.Job,
		"Shepherd-Run-Key":        run.RunKey,
		"Shepherd-Attempt":        strconv.Itoa(run.Attempt),
		"Shepherd-Scheduled-Time": run.Scheduled.Format(time.RFC3339),
	}
	if run.Shards > 0 {
		h["Shepherd-Shard"], h["Shepherd-Shards"] = strconv.Itoa(run.Shard), strconv.Itoa(run.Shards)
		key += "/" + strconv.Itoa(run.Shard)
	}
	h["Idempotency-Key"] = key
	for k, v := range run.Params {
		h["Shepherd-Param-"+k] = url.PathEscape(v)
	}
	return h
}
