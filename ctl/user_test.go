package ctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserAndTokenVerbs: the first admin is made with user add from a
// password file; token create prints a token once and list never shows
// it; without a credential user add refuses, as the account would be
// anyone's.
func TestUserAndTokenVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte("correct horse battery\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := runCtl(t, connect, "user", "add", "--role", "admin", "--password-file", pw, "root"); r.code == 0 || !strings.Contains(r.stderr, "no credential") {
			t.Fatalf("user add without a credential: %v", r)
		}
		if r := runCtlAuth(t, connect, "user", "add", "--role", "boss", "--password-file", pw, "root"); r.code != ExitUsage {
			t.Fatalf("user add with a bad role: %v", r)
		}
		if r := runCtlAuth(t, connect, "user", "add", "root", "--role", "admin", "--password-file", pw); r.code != ExitUsage || !strings.Contains(r.stderr, "flags go before") {
			t.Fatalf("user add with flags after the name: %v", r)
		}
		mustCtlAuth(t, connect, "user", "add", "--role", "admin", "--password-file", pw, "root")
		if r := runCtlAuth(t, connect, "user", "add", "--role", "viewer", "--password-file", pw, "root"); r.code == 0 || !strings.Contains(r.stderr, "--replace") {
			t.Fatalf("second user add: %v", r)
		}
		if out := mustCtlAuth(t, connect, "user", "list"); !strings.HasPrefix(out, "root\tadmin\t") || strings.Contains(out, "$2a$") {
			t.Fatalf("user list: %q", out)
		}
		r := runCtlAuth(t, connect, "token", "create", "--user", "root", "--note", "ci")
		tok := strings.TrimSpace(r.stdout)
		if r.code != 0 || !strings.HasPrefix(tok, "shp_") || !strings.Contains(r.stderr, "only time") {
			t.Fatalf("token create: %v", r)
		}
		list := mustCtlAuth(t, connect, "token", "list")
		id := strings.Split(tok, "_")[1]
		if !strings.HasPrefix(list, id+"\troot\t") || strings.Contains(list, tok) {
			t.Fatalf("token list: %q (token %q)", list, tok)
		}
		mustCtlAuth(t, connect, "token", "revoke", id)
		mustCtlAuth(t, connect, "user", "rm", "root")
		if out := mustCtlAuth(t, connect, "user", "list"); out != "" {
			t.Fatalf("user list after rm: %q", out)
		}
	})
}
