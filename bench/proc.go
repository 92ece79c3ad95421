package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat. The kernel
// exports them in USER_HZ, which is 100 on every architecture Linux
// supports for user space ABI purposes (sysconf(_SC_CLK_TCK)); reading it
// through cgo would buy nothing.
const clockTick = 10 * time.Millisecond

// ErrProcFormat is returned when a /proc file does not parse.
var ErrProcFormat = errors.New("bench: unexpected /proc format")

// ProcessCPU returns the CPU time (user + system) process pid has used so
// far, from /proc/<pid>/stat. Its resolution is one clock tick (10 ms), so
// measure intervals of seconds.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: read cpu time of pid %d: %w", pid, err)
	}
	return parseStatCPU(b)
}

// ProcessRSS returns the resident set size of process pid in bytes, from
// VmRSS in /proc/<pid>/status.
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: read rss of pid %d: %w", pid, err)
	}
	return parseStatusRSS(b)
}

// parseStatCPU extracts utime+stime from the contents of /proc/<pid>/stat.
// The second field is the command name in parentheses and may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat has no command name: %.40q", ErrProcFormat, b)
	}
	// After ") " come fields 3 (state) onward; utime and stime are
	// fields 14 and 15, so indexes 11 and 12 here.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: stat has %d fields after the command name, want at least 13", ErrProcFormat, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: stat cpu field %q", ErrProcFormat, s)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// parseStatusRSS extracts VmRSS, which the kernel reports in kB (KiB),
// from the contents of /proc/<pid>/status.
func parseStatusRSS(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%w: VmRSS line %q", ErrProcFormat, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("%w: VmRSS value %q", ErrProcFormat, f[0])
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("bench: scan status: %w", err)
	}
	// Zombies and kernel threads have no VmRSS line.
	return 0, fmt.Errorf("%w: status has no VmRSS line", ErrProcFormat)
}
