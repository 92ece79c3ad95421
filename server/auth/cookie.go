package auth

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session cookie is "v2.<user>.<id>.<expiry unix>.<mac>", the MAC an
// HMAC-SHA256 under the session key of the rest and of the user's
// password hash. Nothing in it is secret.
//
// A session is also a node, sessions/<user>/<expiry>-<id>, and a cookie
// is accepted only while its node exists: logout deletes it, a password
// change or the user's removal deletes all of the user's, and every
// console sees that at the next request, since the node is looked up on
// every request (one Exists, no cache: a revocation that a cache could
// hide for seconds is not one). The MAC's cover of the hash is a second
// lock: a cookie from before a password change fails even if deleting
// its node did not happen.
//
// Like a token (tokens/<id>, deleted by revoke), a session is a node
// whose existence is the grant; unlike a token it carries no secret of
// its own: the MAC under the session key is what a forger lacks, so a
// node planted by someone else grants nothing.
const cookieVersion = "v2"

// maxSessions bounds the sessions kept per user: a login beyond it ends
// the user's oldest session.
const maxSessions = 64

func cookieMAC(key []byte, u User, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	m.Write([]byte{0})
	m.Write([]byte(u.Hash))
	return m.Sum(nil)
}

func (st *Store) sessionsDir(user string) string { return st.opts.Root + "/sessions/" + user }

// session is a cookie's parts.
type session struct {
	user, id string
	expiry   int64
	payload  string // what the MAC covers
	mac      []byte
}

// node is the session's node name: expiry first, so expired sessions
// are found from a listing without reading any node.
func (s session) node() string { return strconv.FormatInt(s.expiry, 10) + "-" + s.id }

func (s session) value() string { return s.payload + "." + base64.RawURLEncoding.EncodeToString(s.mac) }

// CreateSession records a session of u lasting until expiry and returns
// its cookie value. Expired sessions of u are deleted, and the oldest
// beyond maxSessions.
func (st *Store) CreateSession(ctx context.Context, u User, expiry time.Time) (string, error) {
	key, err := st.SessionKey(ctx)
	if err != nil {
		return "", err
	}
	s := session{user: u.Name, id: strings.ToLower(rand.Text()[:16]), expiry: expiry.Unix()}
	s.payload = cookieVersion + "." + base64.RawURLEncoding.EncodeToString([]byte(u.Name)) + "." + s.id + "." + strconv.FormatInt(s.expiry, 10)
	s.mac = cookieMAC(key, u, s.payload)
	dir := st.sessionsDir(u.Name)
	err = st.s.Retry(ctx, func() error {
		if err := st.ensureDir(ctx, dir); err != nil {
			return err
		}
		_, err := st.s.Create(ctx, dir+"/"+s.node(), nil, zk.FlagPersistent, st.s.SecretACL())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("auth: record a session of %q in %s: %w", u.Name, dir, err)
	}
	if err := st.pruneSessions(ctx, u.Name); err != nil {
		return "", err
	}
	return s.value(), nil
}

// pruneSessions deletes user's expired sessions and the oldest beyond
// maxSessions.
func (st *Store) pruneSessions(ctx context.Context, user string) error {
	names, err := st.children(ctx, st.sessionsDir(user))
	if err != nil {
		return fmt.Errorf("auth: list the sessions of %q: %w", user, err)
	}
	now := st.opts.Now().Unix()
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(expiryOf(a), expiryOf(b)) })
	for i, n := range names {
		if expiryOf(n) > now && len(names)-i <= maxSessions {
			break
		}
		if err := st.deleteSession(ctx, user, n); err != nil {
			return err
		}
	}
	return nil
}

// expiryOf is the expiry of a session node's name; 0 (expired) for a
// name that is not one.
func expiryOf(node string) int64 {
	exp, _, _ := strings.Cut(node, "-")
	n, _ := strconv.ParseInt(exp, 10, 64)
	return n
}

func (st *Store) deleteSession(ctx context.Context, user, node string) error {
	p := st.sessionsDir(user) + "/" + node
	err := st.s.Retry(ctx, func() error { return st.s.Delete(ctx, p, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("auth: delete session %s: %w", p, err)
	}
	return nil
}

// parseSession splits a cookie value; it checks the form, not the MAC.
func parseSession(value string) (session, error) {
	if len(value) > 512 {
		return session{}, ErrBadLogin
	}
	parts := strings.Split(value, ".")
	if len(parts) != 5 || parts[0] != cookieVersion || len(parts[2]) != 16 || !namePattern.MatchString(parts[2]) {
		return session{}, ErrBadLogin
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || CheckName(string(name)) != nil {
		return session{}, ErrBadLogin
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return session{}, ErrBadLogin
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[4])
	if err != nil {
		return session{}, ErrBadLogin
	}
	return session{user: string(name), id: parts[2], expiry: exp, payload: strings.Join(parts[:4], "."), mac: mac}, nil
}

// VerifySession returns the user of a session cookie value that is well
// signed, not expired at now, and not revoked.
func (st *Store) VerifySession(ctx context.Context, value string) (User, error) {
	s, u, err := st.signedSession(ctx, value)
	if err != nil {
		return User{}, err
	}
	var live bool
	err = st.s.Retry(ctx, func() (err error) {
		live, _, err = st.s.Exists(ctx, st.sessionsDir(s.user)+"/"+s.node())
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("auth: look up the session of %q: %w", s.user, err)
	}
	if !live {
		return User{}, ErrBadLogin
	}
	return u, nil
}

// signedSession parses value and checks its expiry and MAC.
func (st *Store) signedSession(ctx context.Context, value string) (session, User, error) {
	s, err := parseSession(value)
	if err != nil || st.opts.Now().Unix() >= s.expiry {
		return session{}, User{}, ErrBadLogin
	}
	key, err := st.SessionKey(ctx)
	if err != nil {
		return session{}, User{}, err
	}
	u, err := st.User(ctx, s.user)
	if err != nil {
		return session{}, User{}, ErrBadLogin
	}
	if !hmac.Equal(s.mac, cookieMAC(key, u, s.payload)) {
		return session{}, User{}, ErrBadLogin
	}
	return s, u, nil
}

// EndSession revokes the session of a cookie value (logout). A value
// that is not a live, well-signed session is ErrBadLogin: only the
// holder of a session can end it.
func (st *Store) EndSession(ctx context.Context, value string) (User, error) {
	s, u, err := st.signedSession(ctx, value)
	if err != nil {
		return User{}, err
	}
	return u, st.deleteSession(ctx, s.user, s.node())
}

// EndSessions revokes every session of user, on every console.
func (st *Store) EndSessions(ctx context.Context, user string) error {
	if err := CheckName(user); err != nil {
		return err
	}
	names, err := st.children(ctx, st.sessionsDir(user))
	if err != nil {
		return fmt.Errorf("auth: list the sessions of %q: %w", user, err)
	}
	for _, n := range names {
		if err := st.deleteSession(ctx, user, n); err != nil {
			return err
		}
	}
	return nil
}
