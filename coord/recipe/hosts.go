package recipe

import (
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// freePassEvery paces eagerHosts' free passes: a server that accepts
// sessions and drops them at once gets at most this many handshakes.
const freePassEvery = 250 * time.Millisecond

// eagerHosts is go-zookeeper's DNSHostProvider without its pause before
// the first reconnection attempt. The stock provider makes a client with
// one server wait a second before every reconnection — after a dropped
// connection, and again after learning its session expired — time a
// suspended lock holder spends not reaching the server while its session
// runs out. eagerHosts lets every server be tried once without a pause
// after a session was established or found expired (a free pass, at most
// one per freePassEvery), and otherwise paces attempts as the stock
// provider does.
type eagerHosts struct {
	*zk.DNSHostProvider

	mu        sync.Mutex
	free      int // attempts of the current free pass still to come
	passLen   int // servers in a pass
	lastPass  time.Time
	passArmed bool // a free pass may start at the next attempt
}

func newEagerHosts() *eagerHosts {
	return &eagerHosts{DNSHostProvider: zk.NewDNSHostProvider()}
}

// Init resolves the servers; the first pass over them is free, and does
// not count against the pace of later ones.
func (h *eagerHosts) Init(servers []string) error {
	if err := h.DNSHostProvider.Init(servers); err != nil {
		return err
	}
	n := h.Len()
	h.mu.Lock()
	h.passLen, h.free = n, n
	h.mu.Unlock()
	return nil
}

// Next returns the next server, and whether the client must pause (and
// fail the requests it queued) before dialling it.
func (h *eagerHosts) Next() (string, bool) {
	server, retryStart := h.DNSHostProvider.Next()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passArmed {
		h.passArmed = false
		if now := time.Now(); now.Sub(h.lastPass) >= freePassEvery {
			h.free, h.lastPass = h.passLen, now
		}
	}
	if h.free > 0 {
		h.free--
		return server, false
	}
	return server, retryStart
}

// Connected records a session established: the next disconnection gets a
// free pass.
func (h *eagerHosts) Connected() {
	h.DNSHostProvider.Connected()
	h.grant()
}

// grant arms a free pass over every server for the next attempt.
func (h *eagerHosts) grant() {
	n := h.Len()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passLen, h.passArmed, h.free = n, true, 0
}
