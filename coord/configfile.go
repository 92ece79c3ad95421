package coord

import (
	"bytes"
	"context"
	"fmt"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// LoadZooCfg applies an Apache ZooKeeper zoo.cfg file to cfg. Warnings
// name keys that have no meaning here. The file may have
// boundedfile.MaxConfig bytes; ctx ends the read (a FIFO, a hung mount).
// YAML config files, whose keys are `shepherd coord`'s flag names, are
// the command's (internal/proc), as for every other command.
func LoadZooCfg(ctx context.Context, path string, cfg *Config) (warnings []string, err error) {
	data, err := boundedfile.Read(ctx, path, boundedfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return ParseZooCfg(bytes.NewReader(data), cfg)
}
