# Shepherd's two commands are `make demo` and `make test`; see README.md.
GO        ?= go
BIN       := bin/shepherd
# Integration tests need real peers (Apache ZooKeeper, kazoo, zkCli.sh);
# with SHEPHERD_IT=1 a missing peer fails the test instead of skipping it.
TEST_ENV  := SHEPHERD_IT=1
TEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: build test test-deps demo-deps bench demo lint fuzz dist clean

# staticcheck runs from the module proxy at a pinned version; go.mod stays ours.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# -buildvcs=auto: `shepherd --version` reports the commit even where
# GOFLAGS turns VCS stamping off.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/shepherd

# Release archives (tar.gz and .deb per architecture) in dist/.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
DIST_ARCHS ?= amd64 arm64
dist:
	scripts/dist.sh $(VERSION) $(DIST_ARCHS)

# The tests and the demo install the peers they need (Debian packages) first;
# the script does nothing when they are there.
test-deps:
	scripts/install-deps.sh test

demo-deps:
	scripts/install-deps.sh demo

test: test-deps
	$(TEST_ENV) $(GO) test $(TEST_FLAGS) ./...

# Side-by-side benchmarks: the coordination server's workloads against
# Apache ZooKeeper 3.8 (server and load generators on disjoint CPUs, medians
# of 3, unclean runs marked; see docs/coord.md#benchmark), lock hand-off with 2, 16 and 128 contenders and
# takeover after a holder's SIGKILL on both servers, collector throughput against cat, replication apply rate
# and CPU per row (durable and relaxed targets) and steady-state lag against MariaDB's native replica, and
# failover time, the console's latency, event fan-out and memory with 1,000 tasks, and the scheduler's
# dispatch latency (due instant to process start) for 1, 100 and 1,000 jobs and 100 shard items on both servers,
# the Kafka and NATS sinks' events/s and CPU per million events beside their clients publishing the same records raw, and
# shepherd dns's queries/s and p99 with 10,000 addresses beside a static answer, and its change-to-answer latency.
bench: build test-deps
	$(BIN) bench --compare --shepherd-bin $(BIN) --out docs/bench-latest.md
	$(TEST_ENV) $(GO) test -run '^$$' -bench 'BenchmarkMutexHandoff' -benchtime 2000x ./coord/recipe/
	$(TEST_ENV) $(GO) test -run '^$$' -bench 'BenchmarkMutexTakeover' -benchtime 5x ./coord/recipe/
	$(TEST_ENV) $(GO) test -run '^$$' -bench . -benchtime 1x ./collector/
	$(TEST_ENV) $(GO) test -run '^$$' -bench 'BenchmarkApply|BenchmarkSteadyLag' -benchtime 1x -timeout 90m ./replication/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkMySQLFailover -benchtime 5x ./core/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkColdRebalance -benchtime 1x ./core/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkConsole -benchtime 1x ./server/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkReadSourcesWithHangingSources -benchtime 1x ./monitor/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkDispatch -benchtime 1x -timeout 30m ./scheduler/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkKafkaSink -benchtime 200000x ./replication/kafkasink/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkNATSSink -benchtime 200000x ./replication/natssink/
	$(TEST_ENV) $(GO) test -run '^$$' -bench 'BenchmarkDNS$$' -benchtime 20000x ./dns/
	$(TEST_ENV) $(GO) test -run '^$$' -bench BenchmarkDNSChange -benchtime 200x ./dns/

demo: build demo-deps
	scripts/demo.sh

lint:
	$(GO) mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Short run of every fuzz target (the seed corpora also run in `make test`).
FUZZTIME ?= 15s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin .demo dist
