// Package sessiontest opens coord/recipe sessions for the tests of the
// packages built on it (core, scheduler, collector, ctl, and the console
// and monitor): the tests' credential, their logger, closed when the test
// ends. It lives beside internal/coordtest, not in it, because coord/recipe's
// own tests use coordtest's servers and could not import a package that
// imports recipe. Test code only.
package sessiontest

import (
	"context"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// DialTimeout bounds the wait for a test session's first connection.
const DialTimeout = 20 * time.Second

// Dial opens a session to connect with opts as given (so an empty Auth is
// an anonymous session: an attacker's), logging to the test unless
// opts.Logger is set, and closes it when the test ends.
func Dial(t testing.TB, connect string, opts recipe.Options) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	if opts.Logger == nil {
		opts.Logger = coordtest.Logger(t)
	}
	s, err := recipe.Dial(ctx, connect, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

// DialAuth is Dial with the tests' credential (coordtest.Auth) and
// sessionTimeout.
func DialAuth(t testing.TB, connect string, sessionTimeout time.Duration) *recipe.Session {
	t.Helper()
	return Dial(t, connect, recipe.Options{SessionTimeout: sessionTimeout, Auth: coordtest.Auth})
}
