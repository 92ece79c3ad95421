package boundedfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadCaps(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("jobs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(t.Context(), small, MaxConfig); err != nil || string(got) != "jobs: []\n" {
		t.Errorf("Read(small) = %q, %v", got, err)
	}
	if got, err := Read(t.Context(), small, 9); err != nil || len(got) != 9 {
		t.Errorf("Read of a file exactly at the cap = %q, %v", got, err)
	}
	_, err := Read(t.Context(), big, MaxConfig)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("Read(2 MiB file, 1 MiB cap) = %v; want ErrTooLarge naming the file and the cap", err)
	}
	if _, err := Read(t.Context(), filepath.Join(dir, "missing"), MaxConfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read(missing) = %v, want not exist", err)
	}
}

// TestDevZeroHitsTheCap: an endless file ends in ErrTooLarge after about
// the cap, not after memory runs out.
func TestDevZeroHitsTheCap(t *testing.T) {
	const max = 4 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Read(t.Context(), "/dev/zero", max)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/dev/zero") || !strings.Contains(err.Error(), "4 MiB") {
		t.Fatalf("Read(/dev/zero) = %v; want ErrTooLarge naming /dev/zero and 4 MiB", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*max {
		t.Errorf("reading /dev/zero with a %d-byte cap allocated %d bytes", max, grew)
	}
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFIFOWithoutWriterIsInterrupted: the open of a FIFO nobody writes,
// which waits in the kernel, ends with the context, and the goroutine
// waiting in it is not left behind.
func TestFIFOWithoutWriterIsInterrupted(t *testing.T) {
	p := mkfifo(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	before := runtime.NumGoroutine()
	go func() {
		_, err := Read(ctx, p, MaxConfig)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), p) {
			t.Errorf("Read(FIFO) after cancel = %v; want context.Canceled naming the FIFO", err)
		}
	case <-time.After(30 * time.Second): // liveness bound only
		t.Fatal("Read of a FIFO without writer did not return after its context ended")
	}
	waitGoroutines(t, before)
}

// TestFIFOWithWriterIsRead: a FIFO with a writer is read to its end.
func TestFIFOWithWriterIsRead(t *testing.T) {
	p := mkfifo(t)
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write([]byte("jobs: []\n"))
		w.Close()
	}()
	if got, err := Read(t.Context(), p, MaxConfig); err != nil || string(got) != "jobs: []\n" {
		t.Errorf("Read(FIFO with writer) = %q, %v", got, err)
	}
}

// TestReadFromPipeIsInterrupted: a pipe that never delivers (standard
// input left open) is interrupted by the context, its reader joined.
func TestReadFromPipeIsInterrupted(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w.Write([]byte("partial"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	before := runtime.NumGoroutine()
	go func() {
		_, err := ReadFrom(ctx, r, "standard input", MaxConfig)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "standard input") {
			t.Errorf("ReadFrom(pipe) after cancel = %v; want context.Canceled naming it", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ReadFrom of a silent pipe did not return after its context ended")
	}
	waitGoroutines(t, before)
}

// waitGoroutines waits (liveness bound) for the goroutines started since
// n to end.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left behind", runtime.NumGoroutine()-n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
