package coord

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// fileConfig mirrors the `shepherd coord` flags for YAML config files: the
// keys are the flag names.
type fileConfig struct {
	Listen                   *string        `yaml:"listen"`
	DataDir                  *string        `yaml:"data-dir"`
	DataLogDir               *string        `yaml:"data-log-dir"`
	TickTime                 *time.Duration `yaml:"tick-time"`
	MinSessionTimeout        *time.Duration `yaml:"min-session-timeout"`
	MaxSessionTimeout        *time.Duration `yaml:"max-session-timeout"`
	SnapCount                *int           `yaml:"snap-count"`
	MaxClientConns           *int           `yaml:"max-client-conns"`
	MaxRequestBytes          *int           `yaml:"max-request-bytes"`
	MaxQueuedBytes           *int64         `yaml:"max-queued-bytes"`
	HandshakeTimeout         *time.Duration `yaml:"handshake-timeout"`
	AdminListen              *string        `yaml:"admin-listen"`
	AdminPprof               *bool          `yaml:"admin-pprof"`
	AdminAuthFile            *string        `yaml:"admin-auth-file"`
	FourLetterWords          []string       `yaml:"4lw"`
	SuperDigest              *string        `yaml:"super-digest"`
	AutopurgeSnapRetainCount *int           `yaml:"autopurge-snap-retain-count"`
	AutopurgeInterval        *time.Duration `yaml:"autopurge-interval"`
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// LoadConfigFile applies a config file to cfg: a YAML file (.yaml, .yml)
// whose keys are the flag names, or else an Apache ZooKeeper zoo.cfg.
// Warnings name zoo.cfg keys that have no meaning here. The file may have
// boundedfile.MaxConfig bytes; ctx ends the read (a FIFO, a hung mount).
func LoadConfigFile(ctx context.Context, path string, cfg *Config) (warnings []string, err error) {
	data, err := boundedfile.Read(ctx, path, boundedfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".yaml" && ext != ".yml" {
		return ParseZooCfg(bytes.NewReader(data), cfg)
	}
	var y fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a misspelt key is an error, not a silent default
	if err := dec.Decode(&y); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	setIf(&cfg.Listen, y.Listen)
	setIf(&cfg.DataDir, y.DataDir)
	setIf(&cfg.DataLogDir, y.DataLogDir)
	setIf(&cfg.TickTime, y.TickTime)
	setIf(&cfg.MinSessionTimeout, y.MinSessionTimeout)
	setIf(&cfg.MaxSessionTimeout, y.MaxSessionTimeout)
	setIf(&cfg.SnapCount, y.SnapCount)
	setIf(&cfg.MaxClientConns, y.MaxClientConns)
	setIf(&cfg.MaxRequestBytes, y.MaxRequestBytes)
	setIf(&cfg.MaxQueuedBytes, y.MaxQueuedBytes)
	setIf(&cfg.HandshakeTimeout, y.HandshakeTimeout)
	setIf(&cfg.AdminListen, y.AdminListen)
	setIf(&cfg.AdminPprof, y.AdminPprof)
	setIf(&cfg.AdminAuthFile, y.AdminAuthFile)
	setIf(&cfg.SuperDigest, y.SuperDigest)
	setIf(&cfg.AutopurgeSnapRetainCount, y.AutopurgeSnapRetainCount)
	setIf(&cfg.AutopurgeInterval, y.AutopurgeInterval)
	if y.FourLetterWords != nil {
		cfg.FourLetterWords = y.FourLetterWords
	}
	return nil, nil
}
