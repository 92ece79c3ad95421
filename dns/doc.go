// Package dns is Shepherd's automated DNS, the load-balancing service of
// seed 000: providers register their addresses under /DDNS, a Scanner
// judges their health, and a DNS server (`shepherd dns`, the seed's
// Dispatcher) answers A, AAAA, SRV and TXT queries from a watched cache
// of the tree.
//
// The znode layout, below the session's root (Root, /DDNS):
//
//	/DDNS                                       persistent, the subtree root (policy ACL)
//	/DDNS/<app>                                 persistent; an application's names
//	/DDNS/<app>/<domain>                        persistent; one name, e.g. server.app1.company1.com
//	/DDNS/<app>/<domain>/providers/<ip:port>    EPHEMERAL (held by the provider's session) or
//	                                            persistent (kept alive by heartbeats); data: Provider
//	/DDNS/<app>/<domain>/heartbeats/<ip:port>   persistent; its mtime is the last heartbeat
//	/DDNS/<app>/<domain>/blocked/<ip:port>      persistent; an operator's block (Mark)
//	/DDNS/<app>/<domain>/unhealthy/<ip:port>    persistent; the Scanner's verdict (Mark)
//	/DDNS/_scanner                              election of the Scanner; data: its last round
//
// An application name is one DNS label (so "_scanner" can never be one);
// a domain is a DNS name of labels; an address is an IP literal and a
// port, as net.JoinHostPort spells it.
//
// An address is served when it is registered, not blocked, not marked
// unhealthy, and trusted (AddressStatus.Served: one rule for the DNS
// server, ctl, the console and the monitor). A heartbeat-registered
// address whose last heartbeat is older than its TTL, or one failing its
// active check, is marked unhealthy by the Scanner and not deleted: it is
// served again as soon as it heartbeats or passes its check.
//
// Trust: the DNS server sends clients where the tree says, and the
// Scanner connects there, so both act only on provider nodes written by a
// trusted identity (recipe.Session.CheckTrusted below Root); the others
// are refused, logged and shown as refused, never served. Registration
// writes with the process's credential; a session without one cannot
// create anything below a Root made with the policy ACL.
//
// dns owns /DDNS and is the only package that decodes it: Admin is the
// administration every reader uses (ctl, the monitor through package
// cluster), ServiceStatus what they show.
//
// It uses only coord/recipe's Session over go-zookeeper, so it runs
// against `shepherd coord` and Apache ZooKeeper alike.
//
// # Concurrency
//
// Cache.mu guards the cache's per-domain state and is never held while
// calling the coordination server; answers are read from an immutable
// Table swapped atomically, so a query takes no lock. Server and Scanner
// own their goroutines and wait for them in Close or when Run returns.
package dns
