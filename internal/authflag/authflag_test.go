package authflag

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

func TestApply(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("ops:from-file\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private, shared := file("private", 0o600), file("shared", 0o644)
	viewer := "digest:" + recipe.Credential{User: "viewer", Password: "pw"}.ID()
	teamB := "digest:" + recipe.Credential{User: "team-b", Password: "pw"}.ID()
	for _, c := range []struct {
		name     string
		st       Settings
		auth     string
		readers  int
		writers  int
		insecure bool
		err      string
	}{
		{name: "none"},
		{name: "plain", st: Settings{Auth: "ops:pw"}, auth: "ops:pw"},
		{name: "zkcli", st: Settings{Auth: "digest:ops:pw"}, auth: "ops:pw"},
		{name: "file", st: Settings{AuthFile: private}, auth: "ops:from-file"},
		{name: "readers", st: Settings{Auth: "ops:pw", ReadACL: []string{viewer, "world:anyone"}}, auth: "ops:pw", readers: 2},
		{name: "insecure", st: Settings{Auth: "ops:pw", Insecure: true}, auth: "ops:pw", insecure: true},
		{name: "both", st: Settings{Auth: "ops:pw", AuthFile: private}, err: "both given"},
		{name: "shared-file", st: Settings{AuthFile: shared}, err: "chmod 600"},
		{name: "bad-auth", st: Settings{Auth: "nocolon"}, err: "--auth: "},
		{name: "bad-reader", st: Settings{Auth: "ops:pw", ReadACL: []string{"digest:viewer"}}, err: "--read-acl: "},
		{name: "readers-open", st: Settings{ReadACL: []string{viewer}}, err: "without a credential"},
		{name: "writers", st: Settings{Auth: "ops:pw", TrustedWriters: []string{teamB}}, auth: "ops:pw", writers: 1},
		{name: "bad-writer", st: Settings{Auth: "ops:pw", TrustedWriters: []string{"world:anyone"}}, err: "--trusted-writers: "},
		{name: "writers-open", st: Settings{TrustedWriters: []string{teamB}}, err: "--trusted-writers without a credential"},
	} {
		var o recipe.Options
		err := c.st.Apply(&o)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case o.Auth != c.auth || len(o.ReadACL) != c.readers || len(o.TrustedWriters) != c.writers || o.InsecureOpenACL != c.insecure:
			t.Errorf("%s: options %+v, want auth %q, %d readers, %d trusted writers, insecure %v", c.name, o, c.auth, c.readers, c.writers, c.insecure)
		}
	}
	if err := (Settings{Auth: "a:b", AuthFile: private}).Apply(&recipe.Options{}); !errors.Is(err, ErrConflict) {
		t.Errorf("both: %v, want ErrConflict", err)
	}
}

func TestWarn(t *testing.T) {
	for _, c := range []struct {
		o         recipe.Options
		want, not []string
	}{
		{o: recipe.Options{}, want: []string{"OPEN CLUSTER", "--auth-file"}, not: []string{"INSECURE"}},
		{o: recipe.Options{Auth: "ops:pw", InsecureOpenACL: true}, want: []string{"INSECURE", "identity=digest:ops"}, not: []string{"OPEN CLUSTER", "pw"}},
		{o: recipe.Options{Auth: "ops:pw"}, want: []string{"authenticated"}, not: []string{"OPEN CLUSTER", "INSECURE", ":pw"}},
	} {
		var buf bytes.Buffer
		Warn(slog.New(slog.NewTextHandler(&buf, nil)), "core", c.o)
		for _, w := range c.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("Warn(%+v) logged %q, want %q in it", c.o, buf.String(), w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(buf.String(), n) {
				t.Errorf("Warn(%+v) logged %q, want no %q", c.o, buf.String(), n)
			}
		}
	}
}
