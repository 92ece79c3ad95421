package coordtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Auth is the digest credential tests give Shepherd's processes and the
// sessions that write what those processes act on: with it, nodes are
// created with the credential's ACL and pass the processes' trust checks
// (docs/security.md). Tests about the open cluster use no credential.
const Auth = "shepherd-test:test-secret"

// AuthFile writes Auth to a file of t's in the format of the admin.auth
// that `shepherd coord` writes (one line user:password, mode 0600) and
// returns its path.
func AuthFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin.auth")
	if err := os.WriteFile(p, []byte(Auth+"\n"), 0o600); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return p
}
