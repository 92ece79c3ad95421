package monitor

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// Config is a monitor's configuration: the config file (YAML, the field
// names below) and flags. Notification channels are only ever taken from
// here, never from the coordination tree.
type Config struct {
	// Name is this monitor's identity in the election; default host-pid.
	Name string `yaml:"name"`
	// Interval is how often rules are evaluated.
	Interval time.Duration `yaml:"interval"`
	// RepeatInterval is how often a firing alert is sent again; 0: never.
	RepeatInterval time.Duration `yaml:"repeatInterval"`
	// Rules are the thresholds; Hold overrides a rule's hold time.
	Rules Thresholds               `yaml:"rules"`
	Hold  map[string]time.Duration `yaml:"hold"`
	// Channels.
	Webhooks []WebhookConfig `yaml:"webhooks"`
	Email    []EmailConfig   `yaml:"email"`
	Commands []CommandConfig `yaml:"commands"`
	// CoreRoot is the replication tree ("" for core.DefaultRoot).
	CoreRoot string `yaml:"coreRoot"`
	// StandbyOnly: never become active (a watcher of the active one).
	StandbyOnly bool `yaml:"standbyOnly"`
}

// WebhookConfig is a webhook channel. Format is shepherd (the default),
// alertmanager or slack.
type WebhookConfig struct {
	URL    string `yaml:"url"`
	Format string `yaml:"format"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Interval: 15 * time.Second, RepeatInterval: 4 * time.Hour, Rules: DefaultThresholds()}
}

// ParseConfig reads a config file's content over the defaults. Unknown
// fields are errors.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("monitor config: %w", err)
	}
	return cfg, cfg.Validate()
}

// LoadConfig reads a config file (bounded).
func LoadConfig(ctx context.Context, path string) (Config, error) {
	data, err := boundedfile.Read(ctx, path, boundedfile.MaxConfig)
	if err != nil {
		return Config{}, fmt.Errorf("monitor config %s: %w", path, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks the config and names the fields at fault.
func (c *Config) Validate() error {
	var errs []string
	if c.Interval < 100*time.Millisecond {
		errs = append(errs, fmt.Sprintf("interval: %v: at least 100ms", c.Interval))
	}
	if c.RepeatInterval < 0 {
		errs = append(errs, "repeatInterval: negative")
	}
	names := map[string]bool{}
	for _, r := range Rules() {
		names[r.Name] = true
	}
	for r, d := range c.Hold {
		if !names[r] {
			errs = append(errs, fmt.Sprintf("hold.%s: no such rule", r))
		} else if d < 0 {
			errs = append(errs, fmt.Sprintf("hold.%s: negative", r))
		}
	}
	if _, err := c.Channels(context.Background()); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("monitor config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Channels builds the configured channels, reading e-mail password files.
func (c *Config) Channels(ctx context.Context) ([]Notifier, error) {
	var out []Notifier
	for _, w := range c.Webhooks {
		n, err := NewWebhook(w.URL, w.Format)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	for _, e := range c.Email {
		if e.PasswordFile != "" {
			data, err := boundedfile.Read(ctx, e.PasswordFile, boundedfile.MaxSecret)
			if err != nil {
				return nil, fmt.Errorf("monitor: email channel: passwordFile: %w", err)
			}
			e.password = strings.TrimRight(string(data), "\r\n")
		}
		if e.CAFile != "" {
			data, err := boundedfile.Read(ctx, e.CAFile, boundedfile.MaxConfig)
			if err != nil {
				return nil, fmt.Errorf("monitor: email channel: caFile: %w", err)
			}
			e.roots = x509.NewCertPool()
			if !e.roots.AppendCertsFromPEM(data) {
				return nil, fmt.Errorf("monitor: email channel: caFile %s: no PEM certificate in it", e.CAFile)
			}
		}
		n, err := newEmail(e)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	for _, cc := range c.Commands {
		n, err := newCommand(cc)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	seen := map[string]bool{}
	for _, n := range out {
		if seen[n.Name()] {
			return nil, fmt.Errorf("monitor: channel %s is configured twice (config file and --webhook count together): give it once", n.Name())
		}
		seen[n.Name()] = true
	}
	return out, nil
}

// holds returns every rule's hold time with the config's overrides.
func (c *Config) holds() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, r := range Rules() {
		out[r.Name] = r.Hold
		if d, ok := c.Hold[r.Name]; ok {
			out[r.Name] = d
		}
	}
	return out
}
