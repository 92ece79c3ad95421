package monitor

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"strings"
	"time"
)

// TLS modes of the e-mail channel.
const (
	TLSStartTLS = "starttls" // the default: STARTTLS, refusing a server without it
	TLSNone     = "none"     // plain text, for a relay on the same host
)

// EmailConfig is an e-mail channel.
type EmailConfig struct {
	// SMTP is the server, host:port (587 for submission with STARTTLS).
	SMTP string   `yaml:"smtp"`
	From string   `yaml:"from"`
	To   []string `yaml:"to"`
	// Username and PasswordFile authenticate (PLAIN); the password is
	// read from a file so that the config file holds no secret.
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"passwordFile"`
	password     string
	// TLS is starttls (the default) or none.
	TLS string `yaml:"tls"`
	// CAFile, if set, holds the PEM certificates the server's must chain
	// to, instead of the system's (a private relay's own CA).
	CAFile string `yaml:"caFile"`
	roots  *x509.CertPool
}

type email struct{ c EmailConfig }

// NewEmail returns an e-mail channel; c.password must be resolved.
func newEmail(c EmailConfig) (Notifier, error) {
	if c.TLS == "" {
		c.TLS = TLSStartTLS
	}
	var errs []string
	if _, _, err := net.SplitHostPort(c.SMTP); err != nil {
		errs = append(errs, fmt.Sprintf("smtp %q: want host:port", c.SMTP))
	}
	if c.From == "" || len(c.To) == 0 {
		errs = append(errs, "from and to are required")
	}
	if c.TLS != TLSStartTLS && c.TLS != TLSNone {
		errs = append(errs, fmt.Sprintf("tls %q: want %s or %s", c.TLS, TLSStartTLS, TLSNone))
	}
	if c.Username != "" && c.TLS == TLSNone {
		errs = append(errs, "username with tls none would send the password in clear: use starttls")
	}
	for _, a := range append([]string{c.From}, c.To...) {
		if strings.ContainsAny(a, "\r\n") {
			errs = append(errs, fmt.Sprintf("address %q holds a line break", a))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("monitor: email channel: %s", strings.Join(errs, "; "))
	}
	return &email{c: c}, nil
}

func (e *email) Name() string { return "email " + strings.Join(e.c.To, ",") }

func (e *email) Send(ctx context.Context, b Batch) error {
	host, _, _ := net.SplitHostPort(e.c.SMTP)
	d := net.Dialer{Timeout: sendTimeout}
	conn, err := d.DialContext(ctx, "tcp", e.c.SMTP)
	if err != nil {
		return err
	}
	defer conn.Close()
	// net/smtp has no contexts: the deadline bounds the whole exchange.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(sendTimeout)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", e.c.SMTP, err)
	}
	defer c.Close()
	if e.c.TLS == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("smtp %s does not offer STARTTLS (set tls: none only for a relay on this host)", e.c.SMTP)
		}
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, RootCAs: e.c.roots}); err != nil {
			return fmt.Errorf("smtp %s: STARTTLS: %w", e.c.SMTP, err)
		}
	}
	if e.c.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", e.c.Username, e.c.password, host)); err != nil {
			return fmt.Errorf("smtp %s: auth as %s: %w", e.c.SMTP, e.c.Username, err)
		}
	}
	if err := c.Mail(e.c.From); err != nil {
		return fmt.Errorf("smtp %s: MAIL FROM %s: %w", e.c.SMTP, e.c.From, err)
	}
	for _, to := range e.c.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("smtp %s: RCPT TO %s: %w", e.c.SMTP, to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", e.c.SMTP, err)
	}
	if _, err := w.Write(e.message(b)); err != nil {
		return fmt.Errorf("smtp %s: write message: %w", e.c.SMTP, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp %s: end of message: %w", e.c.SMTP, err)
	}
	return c.Quit()
}

// message is the RFC 5322 message of a batch: plain text, UTF-8.
func (e *email) message(b Batch) []byte {
	var m bytes.Buffer
	fmt.Fprintf(&m, "From: %s\r\nTo: %s\r\n", e.c.From, strings.Join(e.c.To, ", "))
	fmt.Fprintf(&m, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", b.subject()))
	fmt.Fprintf(&m, "Date: %s\r\n", time.Now().Format(time.RFC1123Z))
	m.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	m.WriteString(strings.ReplaceAll(b.text(), "\n", "\r\n"))
	m.WriteString("\r\n")
	return m.Bytes()
}
