// Package boundedfile reads the files a Shepherd process or ctl is given
// — config files, jobs files, task specs, dumps, password files — with a
// size cap and under a context, so that a wrong path (/dev/zero, a FIFO
// nobody writes, a huge log) can neither grow memory without bound nor
// leave the process deaf to SIGINT/SIGTERM.
//
// It must never be used for data the process streams (collected logs, the
// coordination server's write-ahead log): those have their own limits.
package boundedfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Caps per kind of file. docs/ctl.md lists them.
const (
	// MaxConfig bounds config files (coord YAML and zoo.cfg, core and
	// collector --config), jobs files and task specs: a few KiB each in
	// practice, and what is stored from them must fit in a znode (1 MiB).
	MaxConfig = 1 << 20
	// MaxSecret bounds password and credential files.
	MaxSecret = 64 << 10
	// MaxDump bounds a `ctl load` dump: a subtree with its data.
	MaxDump = 256 << 20
	// MaxLog bounds a run's log file printed by `ctl job logs`.
	MaxLog = 64 << 20
)

// ErrTooLarge reports a file over its cap. The message names the file
// and the cap.
var ErrTooLarge = errors.New("boundedfile: file too large")

// chunk is how much one read asks for: the unit at which a fast endless
// file (/dev/zero) is checked against the cap and the context.
const chunk = 64 << 10

// Read returns the contents of the file at path if it has at most max
// bytes. It fails with ErrTooLarge as soon as more than max bytes have
// come (at once for a regular file whose size says so), having held at
// most max plus one read's worth. When ctx ends first — while a FIFO waits for a
// writer, or a slow device for data — it returns an error wrapping ctx's
// cause (context.Canceled for a signal from signal.NotifyContext).
func Read(ctx context.Context, path string, max int64) ([]byte, error) {
	f, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, tooLarge(path, max)
	}
	return ReadFrom(ctx, f, path, max)
}

// ReadFrom is Read of an open reader, such as standard input; name names
// it in errors. A reader with read deadlines (a pipe, a terminal, a FIFO)
// is interrupted when ctx ends; with any other the read is abandoned to
// the goroutine doing it, which drops what it read when that read
// returns.
func ReadFrom(ctx context.Context, r io.Reader, name string, max int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := readCapped(ctx, r, name, max)
		done <- result{data, err}
	}()
	select {
	case res := <-done:
		return res.data, res.err
	case <-ctx.Done():
	}
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
		<-done // the deadline ends the read in progress: wait for it
	}
	return nil, interrupted(ctx, name)
}

// readCapped reads r to its end, failing as soon as it has more than max
// bytes, and checking ctx between reads. It fills fixed blocks and joins
// them once at the end, so that what it allocates stays near what it
// read (a growing slice would allocate several times that).
func readCapped(ctx context.Context, r io.Reader, name string, max int64) ([]byte, error) {
	var blocks [][]byte
	var total int64
	cur := make([]byte, 0, chunk)
	for {
		if ctx.Err() != nil {
			return nil, interrupted(ctx, name)
		}
		n, err := r.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		if total += int64(n); total > max {
			return nil, tooLarge(name, max)
		}
		if len(cur) == cap(cur) {
			blocks = append(blocks, cur)
			cur = make([]byte, 0, chunk)
		}
		switch {
		case errors.Is(err, io.EOF):
			return bytes.Join(append(blocks, cur), nil), nil
		case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
			return nil, interrupted(ctx, name)
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
}

func tooLarge(name string, max int64) error {
	return fmt.Errorf("%w: %s is larger than %s, the limit for this kind of file: is it the right file?", ErrTooLarge, name, size(max))
}

func interrupted(ctx context.Context, name string) error {
	return fmt.Errorf("read %s: stopped: %w", name, context.Cause(ctx))
}

// size writes n bytes as KiB or MiB when it is a whole number of them.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
