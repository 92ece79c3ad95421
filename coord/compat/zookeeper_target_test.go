package compat

import (
	"os"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

func init() { starters[zookeeper] = startZooKeeper }

// startZooKeeper runs Apache ZooKeeper 3.8 with TTL nodes enabled (they
// are off by default; shepherd always has them) and the stock tickTime,
// so session timeouts negotiate to the same [4 s, 40 s] as shepherd's
// defaults.
func startZooKeeper() (*target, func()) {
	tg := &target{name: zookeeper}
	if why, ok := testpeer.ZooKeeperAvailable(); !ok {
		tg.missing = why
		return tg, func() {}
	}
	dir, err := os.MkdirTemp("", "compat-zookeeper-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	z, err := testpeer.LaunchZooKeeper(dir, testpeer.ZKOptions{
		ExtraConfig: map[string]string{"extendedTypesEnabled": "true"},
	})
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.addr = z.Addr()
	tg.logTail = func() string { return z.LogTail(40) }
	return tg, func() {
		_ = z.Stop()
		os.RemoveAll(dir)
	}
}
