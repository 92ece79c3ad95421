// Package coordhealth is Shepherd's one client of the coordination
// server's four-letter words (ZooKeeper's srvr, mntr, ruok …) and the one
// parser of their answers. `shepherd ctl`, the cluster snapshot (package
// cluster) and the monitor all ask through it, so they read a server's
// health alike, from `shepherd coord` and from Apache ZooKeeper.
//
// It owns no znode: it talks to a server's client port, outside any
// session. It must never send a word that changes a server (crst, srst)
// on its own account: Probe asks srvr, and mntr only as a read. The
// server side of the words is package coord's (coord/fourletter.go).
package coordhealth
