package collector

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// httpReader polls a URL with Range requests for the bytes past the
// position. A server that ignores Range (200) has the known prefix
// skipped; one whose resource is now shorter than the position (416 with
// a smaller total, or a shorter 200 body) was truncated or replaced, and
// reading starts again at 0.
type httpReader struct {
	url    string
	client *http.Client
}

// Read implements reader.
func (h *httpReader) Read(ctx context.Context, pos Position, max int) ([]byte, Position, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, pos, -1, fmt.Errorf("collector: %s: %w", h.url, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", pos.Offset, pos.Offset+int64(max)-1))
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, pos, -1, fmt.Errorf("collector: get %s: %w", h.url, err)
	}
	defer resp.Body.Close()
	var data []byte
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusPartialContent:
		total = contentRangeTotal(resp.Header.Get("Content-Range"))
		data, err = io.ReadAll(io.LimitReader(resp.Body, int64(max)))
	case http.StatusOK:
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, pos.Offset+int64(max)))
		if err == nil {
			if resp.ContentLength >= 0 {
				total = resp.ContentLength
			}
			if int64(len(body)) < pos.Offset && (total < 0 || total < pos.Offset) {
				pos.Offset = 0 // truncated: start over
			}
			if int64(len(body)) >= pos.Offset {
				data = body[pos.Offset:]
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		total = contentRangeTotal(resp.Header.Get("Content-Range"))
		if total >= 0 && total < pos.Offset {
			pos.Offset = 0
		}
		return nil, pos, 0, nil
	default:
		return nil, pos, -1, fmt.Errorf("collector: get %s: status %s", h.url, resp.Status)
	}
	if err != nil {
		return nil, pos, -1, fmt.Errorf("collector: read %s: %w", h.url, err)
	}
	lines := completeLines(data, max)
	pos.Offset += int64(len(lines))
	lag := int64(-1)
	if total >= 0 {
		lag = total - pos.Offset
	}
	return lines, pos, lag, nil
}

// contentRangeTotal is the complete length of "bytes a-b/total" or
// "bytes */total", or -1.
func contentRangeTotal(v string) int64 {
	_, total, ok := strings.Cut(v, "/")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
