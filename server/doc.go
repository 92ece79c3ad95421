// Package server is the control console, `shepherd server`: an HTTP API
// (JSON, /api/v1, described by /api/v1/openapi.json) and a web UI
// (server-rendered, embedded, no CDN) to define replication tasks and
// act on tasks, jobs and collectors.
//
// It is stateless: what it shows comes from the shared read model (a
// Feed of cluster snapshots), what it changes goes through the domain
// packages' admin functions (the same calls as `shepherd ctl`), and its
// accounts, session key, sessions and audit log live in the
// coordination service (packages server/auth and server/audit). Any
// number of consoles may run behind a load balancer.
//
// Security: every request but /login, /health and static files is
// authenticated (session cookie or Bearer token) and checked against
// the route's role; mutating requests are refused cross-origin
// (net/http.CrossOriginProtection) and audited; no CORS headers are ever
// sent; login attempts are limited per (user, client address), per
// address and globally, before the password is checked (limiter.go);
// refusals and failed logins go to the log and the security stream
// (security.go).
//
// It never decodes a znode itself and never writes one except through
// core.Admin, scheduler, collector, monitor (its state and silences,
// read and changed through the functions `ctl alert` calls, and the
// tasks' series the plots read through monitor.ReadSeries), auth and
// audit.
package server
