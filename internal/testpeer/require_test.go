package testpeer

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// recordingTB captures how Require ends a test instead of ending this one.
type recordingTB struct {
	testing.TB
	skipped, fatal string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestRequire(t *testing.T) {
	tests := []struct {
		name      string
		it        string
		ok        bool
		wantSkip  bool
		wantFatal bool
	}{
		{name: "present peer passes", it: "1", ok: true},
		{name: "present peer passes without IT", it: "", ok: true},
		{name: "missing peer skips", it: "", ok: false, wantSkip: true},
		{name: "missing peer skips unless exactly 1", it: "yes", ok: false, wantSkip: true},
		{name: "missing peer fails under IT", it: "1", ok: false, wantFatal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvIntegration, tc.it)
			r := &recordingTB{TB: t}
			Require(r, "kazoo", tc.ok, "no module named kazoo")
			if got := r.skipped != ""; got != tc.wantSkip {
				t.Errorf("skipped = %q, want skip %v", r.skipped, tc.wantSkip)
			}
			if got := r.fatal != ""; got != tc.wantFatal {
				t.Errorf("fatal = %q, want fatal %v", r.fatal, tc.wantFatal)
			}
			for _, msg := range []string{r.skipped, r.fatal} {
				if msg == "" {
					continue
				}
				for _, want := range []string{"kazoo", "no module named kazoo", InstallHint, EnvIntegration} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not mention %q", msg, want)
					}
				}
			}
		})
	}
}

func TestKazooPythonIsTheSystemInterpreter(t *testing.T) {
	py, ok := KazooPython()
	if py != SystemPython {
		t.Fatalf("KazooPython() = %q, want %q (the python3 on PATH may lack kazoo)", py, SystemPython)
	}
	if _, err := os.Stat(py); ok && err != nil {
		t.Fatalf("KazooPython() reports %s usable but stat fails: %v", py, err)
	}
}

func TestFreePortIsListenable(t *testing.T) {
	p := FreePort(t)
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort() = %d, not a TCP port", p)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("listen on FreePort() %d: %v", p, err)
	}
	l.Close()
}
