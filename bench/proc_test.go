package bench

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields 3.. as the kernel writes them, with utime=150 and stime=50.
	const tail = " S 1 1 1 0 -1 4194304 11058 0 3 0 150 50 0 0 20 0 27 0 100 0 0\n"
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"plain", "1234 (java)" + tail, 2 * time.Second, false},
		{"spaces and parens in command", "1234 (a) b (c d)" + tail, 2 * time.Second, false},
		{"no command", "1234 java S 1", 0, true},
		{"truncated", "1234 (java) S 1 1 1", 0, true},
		{"not a number", "1234 (java) S 1 1 1 0 -1 4194304 11058 0 3 0 x 50 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if tt.wantErr {
				if !errors.Is(err, ErrProcFormat) {
					t.Fatalf("parseStatCPU(%q) error = %v, want ErrProcFormat", tt.stat, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStatCPU(%q) = %v, %v; want %v", tt.stat, got, err, tt.want)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"typical", "Name:\tjava\nVmPeak:\t 9000 kB\nVmRSS:\t   64172 kB\nRssAnon:\t 1 kB\n", 64172 << 10, false},
		{"zombie has none", "Name:\tjava\nState:\tZ (zombie)\n", 0, true},
		{"unexpected unit", "VmRSS:\t 12 MB\n", 0, true},
		{"not a number", "VmRSS:\t x kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatusRSS([]byte(tt.status))
			if tt.wantErr {
				if !errors.Is(err, ErrProcFormat) {
					t.Fatalf("parseStatusRSS error = %v, want ErrProcFormat", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStatusRSS = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// The readers must work on a real process: this one.
func TestProcessCPUAndRSSOfSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := ProcessCPU(pid)
	if err != nil {
		t.Fatalf("ProcessCPU(self): %v", err)
	}
	// Burn CPU until the tick-granular counter moves, bounded in time.
	deadline := time.Now().Add(5 * time.Second)
	after := before
	for after == before && time.Now().Before(deadline) {
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		if after, err = ProcessCPU(pid); err != nil {
			t.Fatalf("ProcessCPU(self): %v", err)
		}
	}
	if after <= before {
		t.Errorf("CPU time did not advance after spinning: %v then %v", before, after)
	}
	rss, err := ProcessRSS(pid)
	if err != nil || rss < 1<<20 {
		t.Errorf("ProcessRSS(self) = %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := ProcessCPU(-1); err == nil {
		t.Errorf("ProcessCPU(-1) succeeded, want an error")
	}
}
