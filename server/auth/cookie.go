package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// A session cookie is "v1.<user>.<expiry unix>.<mac>", the MAC an
// HMAC-SHA256 under the session key of the rest and of the user's
// password hash: changing a password (or removing the user) ends its
// sessions on every console, and nothing in the cookie is secret.
const cookieVersion = "v1"

func cookieMAC(key []byte, u User, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	m.Write([]byte{0})
	m.Write([]byte(u.Hash))
	return m.Sum(nil)
}

// SignSession returns a session cookie value for u, valid until expiry.
func SignSession(key []byte, u User, expiry time.Time) string {
	payload := cookieVersion + "." + base64.RawURLEncoding.EncodeToString([]byte(u.Name)) + "." + strconv.FormatInt(expiry.Unix(), 10)
	return payload + "." + base64.RawURLEncoding.EncodeToString(cookieMAC(key, u, payload))
}

// VerifySession returns the user of a session cookie value that is well
// signed and not expired at now.
func (st *Store) VerifySession(ctx context.Context, value string) (User, error) {
	if len(value) > 512 {
		return User{}, ErrBadLogin
	}
	parts := strings.Split(value, ".")
	if len(parts) != 4 || parts[0] != cookieVersion {
		return User{}, ErrBadLogin
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return User{}, ErrBadLogin
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || st.opts.Now().Unix() >= exp {
		return User{}, ErrBadLogin
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		return User{}, ErrBadLogin
	}
	key, err := st.SessionKey(ctx)
	if err != nil {
		return User{}, err
	}
	u, err := st.User(ctx, string(name))
	if err != nil {
		return User{}, ErrBadLogin
	}
	payload := strings.Join(parts[:3], ".")
	if !hmac.Equal(mac, cookieMAC(key, u, payload)) {
		return User{}, ErrBadLogin
	}
	return u, nil
}
