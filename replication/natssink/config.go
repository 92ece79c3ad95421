package natssink

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
)

// Defaults of Config.
const (
	DefaultSubjectPrefix   = "shepherd"
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultBucket          = "shepherd_checkpoints"
	// TakeoverMargin is what a takeover adds to the session timeout (and
	// a cold group's scan interval) before the new owner re-publishes:
	// claiming, reading the checkpoint, reconnecting to the source and the
	// core's first retries. A duplicate window must cover both (see
	// CheckWindow).
	TakeoverMargin = 30 * time.Second
	// MaxDuplicateWindow bounds the window: JetStream keeps every message
	// id of the window in memory.
	MaxDuplicateWindow = 24 * time.Hour
	connectTimeout     = 5 * time.Second
	// ackTimeout bounds the wait for one message's acknowledgement: past
	// it the batch fails and the run retries from the checkpoint.
	ackTimeout = 10 * time.Second
	// maxUnacked bounds the messages published and not yet acknowledged.
	maxUnacked = 1024
)

// SchemaSubject is the last token of the subject of schema changes:
// <prefix>._schema. A table's subject has two tokens after the prefix,
// so no table's subject can be it.
const SchemaSubject = "_schema"

// Config is a NATS JetStream target.
type Config struct {
	// URL is the server, or servers separated by commas:
	// nats://host:4222 (tls://host:4222 for TLS).
	URL string
	// Stream is the JetStream stream the events are published to. It is
	// created if missing (subjects <SubjectPrefix>.>, file storage,
	// Duplicates = DuplicateWindow); an existing one must take those
	// subjects and keep message ids at least DuplicateWindow.
	Stream string
	// SubjectPrefix is the first tokens of every subject: rows go to
	// <prefix>.<db>.<table>, schema changes to <prefix>._schema.
	SubjectPrefix string
	// User and Password authenticate; a Password without a User is a
	// token. Neither is ever logged.
	User, Password string
	// DuplicateWindow is the stream's duplicate window: how long
	// JetStream remembers a message id and drops a message re-sent with
	// it. Zero: DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// Bucket is the JetStream key-value bucket holding the tasks'
	// checkpoints, one key per task. Zero: DefaultBucket.
	Bucket string
}

// ErrConfig reports a Config that cannot work; the message names the
// field as the task spec spells it (target.url …). It wraps
// replication.ErrConfig.
var ErrConfig = fmt.Errorf("natssink: invalid target (%w)", replication.ErrConfig)

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	return c, c.Validate()
}

// Validate checks the fields, naming each as the task spec spells it.
func (c Config) Validate() error {
	p := c.Problems()
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(p, "; "))
}

// Problems lists what is wrong with the fields, each as "field: what",
// the field named as the task spec spells it (target.url …).
func (c Config) Problems() []string {
	var out []string
	bad := func(field, format string, args ...any) {
		out = append(out, field+": "+fmt.Sprintf(format, args...))
	}
	if err := CheckURL(c.URL); err != nil {
		bad("target.url", "%v", err)
	}
	if err := CheckName(c.Stream); err != nil {
		bad("target.stream", "%v", err)
	}
	if c.SubjectPrefix != "" {
		if err := CheckSubjectPrefix(c.SubjectPrefix); err != nil {
			bad("target.subjectPrefix", "%v", err)
		}
	}
	if c.Bucket != "" {
		if err := CheckName(c.Bucket); err != nil {
			bad("target.bucket", "%v", err)
		}
	}
	if c.DuplicateWindow < 0 || c.DuplicateWindow > MaxDuplicateWindow {
		bad("target.duplicateWindow", "%v: want more than 0 and at most %v", c.DuplicateWindow, MaxDuplicateWindow)
	}
	return out
}

// CheckURL checks a server list: nats:// or tls:// URLs with a host,
// separated by commas.
func CheckURL(s string) error {
	if s == "" {
		return errors.New("required (nats://host:4222)")
	}
	for _, part := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		switch {
		case err != nil:
			return fmt.Errorf("%q: %v", part, err)
		case u.Scheme != "nats" && u.Scheme != "tls":
			return fmt.Errorf("%q: the scheme must be nats or tls", part)
		case u.Hostname() == "":
			return fmt.Errorf("%q: no host", part)
		case u.User != nil:
			return fmt.Errorf("%q: give credentials as target.user and target.password or target.passwordFile, not in the URL", redactURL(part))
		}
	}
	return nil
}

// redactURL hides a URL's password in messages.
func redactURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// CheckName checks a stream or bucket name: letters, digits, '-' and
// '_', as JetStream allows everywhere.
func CheckName(s string) error {
	if s == "" {
		return errors.New("required")
	}
	if len(s) > 64 {
		return fmt.Errorf("%q: at most 64 characters", s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%q: use letters, digits, '-' and '_'", s)
		}
	}
	return nil
}

// CheckSubjectPrefix checks a subject prefix: tokens separated by dots,
// none empty, no wildcards or white space.
func CheckSubjectPrefix(s string) error {
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || strings.ContainsAny(tok, "*> \t\r\n") || strings.HasPrefix(s, "$") {
			return fmt.Errorf("%q: want tokens of letters, digits, '-' and '_' separated by dots, without wildcards (shepherd, cdc.shop)", s)
		}
	}
	return nil
}

// CheckWindow refuses a duplicate window that a takeover can outlast: a
// new owner re-publishes what its predecessor published after their last
// checkpoint up to sessionTimeout + scanInterval (cold standby; 0 for
// hot) + TakeoverMargin after it, and JetStream drops those re-sends only
// within the window.
func CheckWindow(window, sessionTimeout, scanInterval time.Duration) error {
	if window == 0 {
		window = DefaultDuplicateWindow
	}
	need := sessionTimeout + scanInterval + TakeoverMargin
	if window < need {
		return fmt.Errorf("%w: target.duplicateWindow: %v is shorter than a takeover may take (session timeout %v + scan interval %v + %v): a new owner's re-sends could outlive it and be stored twice; give at least %v",
			ErrConfig, window, sessionTimeout, scanInterval, TakeoverMargin, need)
	}
	return nil
}
