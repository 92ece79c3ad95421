// Package layering holds no code: its test checks that the import rules
// the package docs state ("the server side of coord never imports a
// ZooKeeper client", …) hold for the code as it is, by reading the
// packages' dependencies from `go list -deps`. A rule stated only in
// prose is kept only until someone forgets it; here a forbidden arrow
// fails `make test` and names the package that brought it in.
package layering
