package monitor

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// selfSigned writes a certificate for 127.0.0.1 and its key; the
// certificate is its own CA.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for p, b := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(p, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// smtpServer is aiosmtpd (Debian's python3-aiosmtpd) printing every
// message it receives; subjects collects their Subject lines.
type smtpServer struct {
	addr string
	mu   sync.Mutex
	subj []string
}

func startSMTP(t *testing.T, args ...string) *smtpServer {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c", "import aiosmtpd").CombinedOutput()
	testpeer.Require(t, "python3-aiosmtpd", err == nil, fmt.Sprintf("/usr/bin/python3 cannot import aiosmtpd (Debian package python3-aiosmtpd; scripts/install-deps.sh): %v %s", err, out))
	srv := &smtpServer{addr: fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))}
	cmd := exec.Command("/usr/bin/python3", append([]string{"-u", "-m", "aiosmtpd", "-n", "-l", srv.addr}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "Subject: "); ok {
				srv.mu.Lock()
				srv.subj = append(srv.subj, s)
				srv.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
	})
	coordtest.WaitFor(t, 20*time.Second, "aiosmtpd listening on "+srv.addr, func() error {
		c, err := net.Dial("tcp", srv.addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	return srv
}

func (s *smtpServer) subjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.subj...)
}

func (s *smtpServer) waitSubjects(t *testing.T, want ...string) {
	t.Helper()
	coordtest.WaitFor(t, 20*time.Second, fmt.Sprintf("mails %q", want), func() error {
		got := s.subjects()
		if len(got) > len(want) {
			t.Fatalf("mails %q, want %q", got, want)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			return fmt.Errorf("mails %q", got)
		}
		return nil
	})
}

// TestEmailOneFiringOneResolvedOverSTARTTLS: a real SMTP server offering
// STARTTLS gets exactly one mail when the alert fires and one when it
// resolves; the monitor refuses to send in clear to a server without it.
func TestEmailOneFiringOneResolvedOverSTARTTLS(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	smtpd := startSMTP(t, "--tlscert", cert, "--tlskey", key)
	cfg := DefaultConfig()
	cfg.Interval = 100 * time.Millisecond
	cfg.Email = []EmailConfig{{SMTP: smtpd.addr, From: "shepherd@example.org", To: []string{"ops@example.org"}, CAFile: cert}}
	feed := cluster.NewFixed(failedSnap())
	connect := tg.Addr + "/" + fmt.Sprintf("smtp-%d", time.Now().UnixNano())
	m, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
	smtpd.waitSubjects(t, `[FIRING] TaskFailed task=orders`)
	waitEvaluations(t, m, 3)
	feed.Set(healthySnap())
	smtpd.waitSubjects(t, `[FIRING] TaskFailed task=orders`, `[RESOLVED] TaskFailed task=orders`)
	waitEvaluations(t, m, 3)
	smtpd.waitSubjects(t, `[FIRING] TaskFailed task=orders`, `[RESOLVED] TaskFailed task=orders`)

	// Without STARTTLS on offer, the default refuses to send.
	plain := startSMTP(t)
	n, err := newEmail(EmailConfig{SMTP: plain.addr, From: "a@example.org", To: []string{"b@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	err = n.Send(context.Background(), Batch{Notifications: []Notification{{Status: StatusTest, Rule: "Test"}}})
	if err == nil || !strings.Contains(err.Error(), "does not offer STARTTLS") {
		t.Fatalf("send to a server without STARTTLS: %v", err)
	}
	if got := plain.subjects(); len(got) != 0 {
		t.Fatalf("mail sent in clear: %q", got)
	}
}
