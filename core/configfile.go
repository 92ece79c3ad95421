package core

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// FileConfig is the YAML file of `shepherd core --config`: its keys are
// the command's flag names, and flags given on the command line win.
type FileConfig struct {
	ZK                 string        `yaml:"zk"`
	Auth               string        `yaml:"auth"`
	AuthFile           string        `yaml:"auth-file"`
	ReadACL            []string      `yaml:"read-acl"`
	InsecureOpenACL    bool          `yaml:"insecure-open-acl"`
	SessionTimeout     time.Duration `yaml:"session-timeout"`
	Host               string        `yaml:"host"`
	Tasks              []string      `yaml:"task"`
	Group              string        `yaml:"group"`
	ScanInterval       time.Duration `yaml:"scan-interval"`
	Capacity           int           `yaml:"capacity"`
	BalanceMoves       *int          `yaml:"balance-moves"`
	BalanceGrace       time.Duration `yaml:"balance-grace"`
	Root               string        `yaml:"root"`
	CheckpointInterval time.Duration `yaml:"checkpoint-interval"`
	MaxFailures        int           `yaml:"max-failures"`
	RetryBase          time.Duration `yaml:"retry-base"`
	RetryMax           time.Duration `yaml:"retry-max"`
	MetricsListen      string        `yaml:"metrics-listen"`
}

// LoadConfigFile reads a FileConfig. Unknown keys are errors naming the
// key, so that a misspelt setting is not silently ignored. The file may
// have boundedfile.MaxConfig bytes; ctx ends the read.
func LoadConfigFile(ctx context.Context, path string) (FileConfig, error) {
	var fc FileConfig
	data, err := boundedfile.Read(ctx, path, boundedfile.MaxConfig)
	if err != nil {
		return fc, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return fc, fmt.Errorf("%w: %s: %v", ErrBadConfig, path, err)
	}
	return fc, nil
}
