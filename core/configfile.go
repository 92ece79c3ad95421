package core

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// FileConfig is the YAML file of `shepherd core --config`: its keys are
// the command's flag names, and flags given on the command line win.
type FileConfig struct {
	ZK                 string        `yaml:"zk"`
	Auth               string        `yaml:"auth"`
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
// key, so that a misspelt setting is not silently ignored.
func LoadConfigFile(path string) (FileConfig, error) {
	var fc FileConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return fc, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return fc, fmt.Errorf("%w: %s: %v", ErrBadConfig, path, err)
	}
	return fc, nil
}
