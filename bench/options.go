package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Errors returned by Run and Compare. Callers match them with errors.Is.
var (
	// ErrUnknownWorkload is returned for a workload name not in Workloads().
	ErrUnknownWorkload = errors.New("bench: unknown workload")
	// ErrNoAddr is returned when Options.Addr is empty.
	ErrNoAddr = errors.New("bench: no server address")
	// ErrBadOption is returned when an Options field is out of range.
	ErrBadOption = errors.New("bench: invalid option")
	// ErrRestartUnsupported is returned by Target.Restart for servers this
	// package did not start (see Existing).
	ErrRestartUnsupported = errors.New("bench: target cannot be restarted")
)

// Defaults applied by Run to zero-valued Options fields.
const (
	DefaultClients    = 32
	DefaultInFlight   = 8
	DefaultDuration   = 5 * time.Second
	DefaultValueBytes = 100
	DefaultWatchers   = 1000
	DefaultTreeNodes  = 200_000
	DefaultWarmup     = time.Second
	// DefaultClient is the load generator's client: see Options.Client.
	DefaultClient = ClientWire
)

// The clients a load generator can speak through (Options.Client).
const (
	// ClientWire is bench's own minimal client (see wire.go): one write
	// system call per request, like real clients, at a fraction of their
	// CPU, so that the server, not the generator, sets the pace. It runs
	// the workloads in WireWorkloads; the others use go-zookeeper.
	ClientWire = "wire"
	// ClientGoZK is go-zookeeper/zk for every workload.
	ClientGoZK = "go-zookeeper"
)

// WireWorkloads are the workloads ClientWire can run.
var WireWorkloads = []string{"create", "set", "get", "exists", "mixed", "multi", "session-churn"}

// Options configures one workload run.
type Options struct {
	// Addr is the server's client address, host:port.
	Addr string
	// Clients is the number of client sessions (connections); for the lock
	// workload it is the number of contenders. Default 32.
	Clients int
	// InFlight is how many requests each session keeps outstanding; they
	// are issued from that many goroutines sharing the session, which
	// go-zookeeper pipelines onto one connection. Default 8.
	InFlight int
	// Duration bounds the measured phase of rate workloads. Default 5s.
	// tree200k is bounded by node count instead, and by 60×Duration.
	Duration time.Duration
	// Ops, if positive, caps the operations measured. For tree200k it is
	// the number of znodes to create (default 200 000); for watch-fanout
	// it caps delivered notifications.
	Ops int
	// ValueBytes is the size of every value written. Default 100.
	ValueBytes int
	// PID is the server's process id, for CPU and RSS; 0 means unknown and
	// leaves CPUPerOp and RSSBytes zero.
	PID int
	// Watchers is the number of sessions watching one znode in
	// watch-fanout. Default 1000. The server must allow that many
	// connections from one address (ZooKeeper: maxClientCnxns=0).
	Watchers int
	// Target, if set, lets tree200k measure restart-to-ready time by
	// restarting the server. It must be the server at Addr.
	Target Target
	// KeepData leaves the workload's znodes on the server when it ends.
	// Set it when the server is thrown away afterwards (Compare starts a
	// fresh one per workload); otherwise Run deletes what it created.
	KeepData bool
	// Warmup is how long Compare runs the mixed workload on every freshly
	// started server before measuring, so that a JVM has compiled its hot
	// paths before the clock starts. Default 1s; negative disables it.
	// Run ignores it.
	Warmup time.Duration
	// Client is what issues the measured requests of the workloads in
	// WireWorkloads: ClientWire (the default) or ClientGoZK. Set-up,
	// clean-up and every other workload use go-zookeeper.
	Client string
	// Logger receives progress lines; nil means slog.Default().
	Logger *slog.Logger

	// hooks, if set, frame the measured phase (see ServeGenerator).
	hooks *phaseHooks
}

// withDefaults returns o with zero fields set to their defaults, or an
// error naming the first invalid field. Addr is the caller's to check:
// Compare fills it in per target.
func (o Options) withDefaults() (Options, error) {
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&o.Clients, DefaultClients)
	fill(&o.InFlight, DefaultInFlight)
	fill(&o.ValueBytes, DefaultValueBytes)
	fill(&o.Watchers, DefaultWatchers)
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Client == "" {
		o.Client = DefaultClient
	}
	if o.Client != ClientWire && o.Client != ClientGoZK {
		return o, fmt.Errorf("%w: Client %q (known: %s, %s)", ErrBadOption, o.Client, ClientWire, ClientGoZK)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Clients", o.Clients}, {"InFlight", o.InFlight}, {"ValueBytes", o.ValueBytes},
		{"Watchers", o.Watchers}, {"Ops", o.Ops}, {"PID", o.PID},
	} {
		if f.v < 0 {
			return o, fmt.Errorf("%w: %s is %d, must not be negative", ErrBadOption, f.name, f.v)
		}
	}
	if o.Duration < 0 {
		return o, fmt.Errorf("%w: Duration %v must be positive", ErrBadOption, o.Duration)
	}
	// Keep a single request under go-zookeeper's 1.5 MiB buffer and
	// ZooKeeper's default 1 MiB jute.maxbuffer.
	if o.ValueBytes > 1<<20-1024 {
		return o, fmt.Errorf("%w: ValueBytes %d exceeds the 1 MiB ZooKeeper limit", ErrBadOption, o.ValueBytes)
	}
	return o, nil
}

// Result is what one workload measured on one server.
type Result struct {
	// Workload is the workload's name.
	Workload string
	// Ops is the number of operations measured; what one operation is
	// depends on the workload (see Workload.Unit).
	Ops int
	// OpsPerSec is Ops divided by the wall time of the measured phase.
	OpsPerSec float64
	// P50 and P99 are latency percentiles of one operation, or of what
	// Workload.Latency names.
	P50, P99 time.Duration
	// CPUPerOp is the server's CPU time (user+system) during the measured
	// phase divided by Ops; zero when Options.PID is zero.
	CPUPerOp time.Duration
	// RSSBytes is the server's resident set size at the end of the
	// measured phase; zero when Options.PID is zero.
	RSSBytes int64
	// Extra holds workload-specific figures (e.g. "restart",
	// "notify/release"), already formatted for display.
	Extra map[string]string

	// dist is the latency sample P50 and P99 come from.
	dist distribution
}
