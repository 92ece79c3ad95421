package dns

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// Every integration test runs against both servers: shepherd coord in
// process and Apache ZooKeeper 3.8 as a child JVM, started once per test
// binary with a short tick so that the sessions of killed providers
// expire in about a second. Each test works below its own chroot.
const testTick = 100 * time.Millisecond

// testSessionTimeout is the providers' session timeout.
const testSessionTimeout = time.Second

// testZone is the zone the tests' DNS servers answer for.
const testZone = "svc.example."

// waitLong bounds every wait for an eventual condition (a liveness
// bound on a loaded machine, never a timing assertion).
const waitLong = 60 * time.Second

var targets []*coordtest.Target

// childEnv, when set, makes the test binary a provider process (for the
// SIGKILL tests) configured by the JSON childConfig in the variable.
const childEnv = "DNS_TEST_CHILD"

type childConfig struct {
	Connect string        `json:"connect"`
	App     string        `json:"app"`
	Domain  string        `json:"domain"`
	Addr    string        `json:"addr"`
	TTL     time.Duration `json:"ttl"` // 0: session-held
}

func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(coordtest.Run(m, "dns", testTick, &targets))
}

// runChild registers one address and keeps it (session or heartbeats
// every TTL/3) until killed.
func runChild(conf string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := recipe.Dial(ctx, c.Connect, recipe.Options{SessionTimeout: testSessionTimeout, Auth: coordtest.Auth, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	n, err := NewName(c.App, c.Domain)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	addr, err := ParseAddr(c.Addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r := Registration{Addr: addr, TTL: c.TTL}
	if c.TTL == 0 {
		if _, err := Register(ctx, s, n, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		<-ctx.Done()
		return 0
	}
	if err := RegisterTTL(ctx, s, n, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	t := time.NewTicker(c.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
			if err := Heartbeat(ctx, s, n, addr); err != nil {
				log.Warn("heartbeat", "err", err)
			}
		}
	}
}

// startChild runs a provider process; it is killed when the test ends.
func startChild(t *testing.T, c childConfig) *exec.Cmd {
	t.Helper()
	conf, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(conf))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("provider process did not start: %q %v", buf, err)
	}
	return cmd
}

// onEachTarget runs body as a subtest per server, with a connect string
// whose chroot is the test's own.
func onEachTarget(t *testing.T, body func(t *testing.T, connect string)) {
	t.Helper()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		body(t, tg.Addr+"/"+chrootName(t))
	})
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func chrootName(t *testing.T) string {
	return fmt.Sprintf("%s-%d", unsafeChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano())
}

// dial opens a session with the tests' credential.
func dial(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	return sessiontest.DialAuth(t, connect, testSessionTimeout)
}

// startDNS runs a DNS server on a random loopback port until the test
// ends.
func startDNS(t *testing.T, s *recipe.Session, opts ServerOptions) *Server {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	if opts.Zone == "" {
		opts.Zone = testZone
	}
	if opts.Logger == nil {
		opts.Logger = coordtest.Logger(t)
	}
	sv, err := NewServer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dns server: Run: %v", err)
		}
		if err := sv.Close(); err != nil {
			t.Errorf("dns server: Close: %v", err)
		}
	})
	return sv
}

// startScanner runs a scanner on s until the test ends.
func startScanner(t *testing.T, s *recipe.Session, opts ScannerOptions) *Scanner {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = coordtest.Logger(t)
	}
	if opts.Interval == 0 {
		opts.Interval = 100 * time.Millisecond
	}
	sc, err := NewScanner(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scanner: Run: %v", err)
		}
	})
	return sc
}

// resolver is Go's resolver asking only the server at addr, over UDP or
// TCP as it chooses.
func resolver(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// lookupA is the sorted IPv4 addresses of name from the server at addr;
// NXDOMAIN and NODATA are no addresses.
func lookupA(addr, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := resolver(addr).LookupIP(ctx, "ip4", name)
	if dnsErr, ok := err.(*net.DNSError); ok && dnsErr.IsNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out, nil
}

// waitA waits until the server at addr answers name's A query with want.
func waitA(t *testing.T, addr, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	coordtest.WaitFor(t, waitLong, fmt.Sprintf("A %s = %v", name, want), func() error {
		got, err := lookupA(addr, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("got %v", got)
		}
		return nil
	})
}

// requireDig returns dig's path; a missing dig skips, or fails under
// SHEPHERD_IT=1.
func requireDig(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("dig")
	why := ""
	if err != nil {
		why = fmt.Sprintf("dig not found (Debian package bind9-dnsutils; scripts/install-deps.sh installs it): %v", err)
	}
	testpeer.Require(t, "dig", err == nil, why)
	return p
}

// dig asks the server at addr with dig (+tcp when tcp) and returns its
// +short answer lines, sorted, and the status of the header.
func dig(t *testing.T, addr, name, qtype string, tcp bool) (lines []string, status string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	args := []string{"@" + host, "-p", port, "+time=5", "+tries=1", "+nocmd", "+noall", "+answer", "+comments", name, qtype}
	if tcp {
		args = append(args, "+tcp")
	}
	out, err := exec.Command(requireDig(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if m := regexp.MustCompile(`status: ([A-Z]+)`).FindStringSubmatch(string(out)); m != nil {
		status = m[1]
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" || strings.HasPrefix(l, ";") {
			continue
		}
		f := strings.Fields(l)
		if len(f) >= 5 {
			lines = append(lines, strings.Join(f[3:], " "))
		}
	}
	slices.Sort(lines)
	return lines, status
}

func mustName(t *testing.T, app, domain string) Name {
	t.Helper()
	n, err := NewName(app, domain)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustAddr(t *testing.T, s string) Registration {
	t.Helper()
	a, err := ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return Registration{Addr: a}
}
