// Package auth owns the console's accounts: users (bcrypt hashes, one of
// three roles), API tokens (only a SHA-256 of each is stored), the key
// that signs session cookies, and the sessions (one node each, deleted
// by logout or a password change: cookie.go). All of it lives in the coordination
// service below Root, in nodes only the console's credential may read or
// write (the session's SecretACL), so every console process of a cluster
// accepts the same logins and cookies and none keeps state of its own.
//
// A node below Root is used only after Session.CheckTrusted passes: a
// user record anyone could have written would let anyone make themselves
// admin. Without a credential nothing here works, on purpose.
//
// The package never serves HTTP and never logs a password, a hash or a
// token; `shepherd ctl user|token` and package server both use it.
package auth
