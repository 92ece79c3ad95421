package core

import (
	"context"
	"log/slog"

	"github.com/shepherd-dev/shepherd/replication"
)

// DryRunReport is what a dry run of a spec found (replication.DryRun).
type DryRunReport = replication.DryRunReport

// DryRun checks, writing nothing, that sp could run: both servers
// reachable with its accounts, the source's binary log fit for row-based
// replication, the grants, its start position still on the source, and
// the tables its filter selects. It is the console's "test connection".
// A password file is read as the core would read it, on this host.
func (MySQL) DryRun(ctx context.Context, sp *Spec) (DryRunReport, error) {
	cfg, err := replicationConfig(ctx, sp, slog.New(slog.DiscardHandler))
	if err != nil {
		return DryRunReport{}, err
	}
	return replication.DryRun(ctx, cfg, sp.Start)
}
