//go:build unix

package boundedfile

import (
	"context"
	"os"
	"syscall"
	"time"
)

// fifoUnblockTries bounds how long open keeps trying to end a FIFO open
// it abandons (see open): each try waits fifoUnblockWait.
const (
	fifoUnblockTries = 100
	fifoUnblockWait  = 10 * time.Millisecond
)

// open opens path for reading. Opening a FIFO waits in the kernel for a
// writer, where no context reaches, so it is done in a goroutine; when ctx
// ends first, open becomes that writer for a moment (a non-blocking open
// for writing succeeds once a reader waits), which lets the goroutine's
// open return, and closes what it opened.
func open(ctx context.Context, path string) (*os.File, error) {
	st, err := os.Stat(path) // does not wait, even on a FIFO
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		done <- result{f, err}
	}()
	select {
	case res := <-done:
		return res.f, res.err
	case <-ctx.Done():
	}
	for range fifoUnblockTries {
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case res := <-done:
			if res.f != nil {
				res.f.Close()
			}
			return nil, interrupted(ctx, path)
		case <-time.After(fifoUnblockWait): // the goroutine was not yet waiting in open: again
		}
	}
	// The path no longer leads to the FIFO the goroutine waits on: leave
	// it there; it closes what it gets if it ever returns.
	go func() {
		if res := <-done; res.f != nil {
			res.f.Close()
		}
	}()
	return nil, interrupted(ctx, path)
}
