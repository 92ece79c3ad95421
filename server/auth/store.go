package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Root is where the console keeps its accounts and audit log.
const Root = "/shepherd/console"

// AuditDir is where the console keeps its audit log (package
// server/audit): readable by viewers, unlike the accounts beside it.
const AuditDir = Root + "/audit"

// Subtrees are the roots of the console's nodes, for
// recipe.Session.EnsureSubtree: secret, as the accounts below are.
func Subtrees() []recipe.Subtree { return []recipe.Subtree{{Path: Root, Secret: true}} }

// PolicyACL is the ACL the security policy gives the node at p of the
// console's tree (shepherd ctl secure): the node ACL for the audit log,
// the secret ACL for the accounts, tokens and session key.
func PolicyACL(s *recipe.Session, p string) []zk.ACL {
	if p == AuditDir || strings.HasPrefix(p, AuditDir+"/") {
		return s.NodeACL()
	}
	return s.SecretACL()
}

// Errors of the store.
var (
	// ErrBadLogin: unknown user or wrong password (deliberately one error).
	ErrBadLogin = errors.New("auth: wrong user name or password")
	// ErrNoUser: no user of that name.
	ErrNoUser = errors.New("auth: no such user")
	// ErrUserExists: AddUser without replace found the user.
	ErrUserExists = errors.New("auth: user exists")
	// ErrBadToken: a token that is malformed, unknown or revoked.
	ErrBadToken = errors.New("auth: invalid API token")
	// ErrInvalid: a bad name, role or password.
	ErrInvalid = errors.New("auth: invalid input")
)

// Role is what a user may do. Each role may do what the one before may.
type Role string

// The roles, from least to most.
const (
	// Viewer reads everything but secrets, and changes nothing.
	Viewer Role = "viewer"
	// Operator also acts on existing tasks and jobs (start, stop, run…).
	Operator Role = "operator"
	// Admin also defines and deletes tasks and sources, and manages users.
	Admin Role = "admin"
)

var roleRank = map[Role]int{Viewer: 1, Operator: 2, Admin: 3}

// ParseRole parses viewer, operator or admin.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if roleRank[r] == 0 {
		return "", fmt.Errorf("%w: role %q: want viewer, operator or admin", ErrInvalid, s)
	}
	return r, nil
}

// Allows reports whether a user of role r may do what needs role need.
func (r Role) Allows(need Role) bool { return roleRank[r] > 0 && roleRank[r] >= roleRank[need] }

// User is a stored account.
type User struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Hash    string    `json:"hash"` // bcrypt of the password
	Created time.Time `json:"created"`
}

// Info is a user as listed: no hash.
type Info struct {
	Name    string    `json:"name"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
}

// TokenInfo is a stored API token without its secret.
type TokenInfo struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Note    string    `json:"note,omitempty"`
	Created time.Time `json:"created"`
	// Digest is the hex SHA-256 of the token's secret part.
	Digest string `json:"digest,omitempty"`
}

// Password bounds: bcrypt reads 72 bytes at most, and a short password
// is guessed offline from a leaked hash.
const (
	MinPassword = 8
	MaxPassword = 72
	maxNode     = 4096 // a user or token record is far smaller
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// Options configures a Store.
type Options struct {
	// Root replaces Root (tests).
	Root string
	// BcryptCost is the cost of new hashes; 0 is bcrypt.DefaultCost.
	BcryptCost int
	// CacheTTL is how long a user or token read from the tree is
	// trusted before being read again; 0 is 2s. A removed user or
	// revoked token stops working within it on every console.
	CacheTTL time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Compare checks a password against a bcrypt hash; nil is
	// bcrypt.CompareHashAndPassword (tests count and hold the checks).
	Compare func(hash, password []byte) error
}

// Store reads and writes the accounts through a Session.
type Store struct {
	s    *recipe.Session
	opts Options

	mu    sync.Mutex
	users map[string]cachedUser // by name; bounded by the users that exist
	key   []byte                // session key, once read

	dummyOnce sync.Once
	dummy     []byte // see dummyHash
}

type cachedUser struct {
	u   User
	err error
	at  time.Time
}

// NewStore returns a Store of the accounts below opts.Root.
func NewStore(s *recipe.Session, opts Options) *Store {
	if opts.Root == "" {
		opts.Root = Root
	}
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Compare == nil {
		opts.Compare = bcrypt.CompareHashAndPassword
	}
	return &Store{s: s, opts: opts, users: map[string]cachedUser{}}
}

// Root is the store's root node.
func (st *Store) Root() string { return st.opts.Root }

func (st *Store) usersDir() string           { return st.opts.Root + "/users" }
func (st *Store) userPath(n string) string   { return st.usersDir() + "/" + n }
func (st *Store) tokensDir() string          { return st.opts.Root + "/tokens" }
func (st *Store) tokenPath(id string) string { return st.tokensDir() + "/" + id }
func (st *Store) keyPath() string            { return st.opts.Root + "/session-key" }

// CheckName checks a user name.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: user name %q: want 1 to 64 letters, digits or _.@- (not first)", ErrInvalid, name)
	}
	return nil
}

func checkPassword(pw []byte) error {
	switch {
	case len(pw) < MinPassword:
		return fmt.Errorf("%w: password of %d bytes: want at least %d", ErrInvalid, len(pw), MinPassword)
	case len(pw) > MaxPassword:
		return fmt.Errorf("%w: password of %d bytes: bcrypt reads at most %d", ErrInvalid, len(pw), MaxPassword)
	}
	return nil
}

// AddUser stores a user with a bcrypt hash of password. With replace it
// overwrites an existing user (a new password or role); without, an
// existing user is ErrUserExists.
func (st *Store) AddUser(ctx context.Context, name string, role Role, password []byte, replace bool) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return err
	}
	if err := checkPassword(password); err != nil {
		return err
	}
	if !st.s.Secured() {
		return fmt.Errorf("auth: add user %q: the session has no credential, so the account would be readable and writable by anyone: pass --auth-file (docs/security.md)", name)
	}
	hash, err := bcrypt.GenerateFromPassword(password, st.opts.BcryptCost)
	if err != nil {
		return fmt.Errorf("auth: add user %q: %w", name, err)
	}
	u := User{Version: 1, Name: name, Role: role, Hash: string(hash), Created: st.opts.Now().UTC()}
	data, _ := json.Marshal(u)
	replaced := false
	err = st.s.Retry(ctx, func() error {
		if err := st.ensureDir(ctx, st.usersDir()); err != nil {
			return err
		}
		_, err := st.s.Create(ctx, st.userPath(name), data, zk.FlagPersistent, st.s.SecretACL())
		if errors.Is(err, zk.ErrNodeExists) {
			if !replace {
				return fmt.Errorf("%w: %s (use --replace to change its password or role)", ErrUserExists, name)
			}
			if _, err := st.s.SetACL(ctx, st.userPath(name), st.s.SecretACL(), -1); err != nil {
				return err
			}
			_, err = st.s.Set(ctx, st.userPath(name), data, -1)
			replaced = err == nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("auth: add user %q: %w", name, err)
	}
	st.forget(name)
	if replaced {
		// A new password or role: whoever is logged in as the user logs
		// in again, under the new one.
		return st.EndSessions(ctx, name)
	}
	return nil
}

// ensureDir creates dir and its ancestors with the secret ACL: the
// directories of accounts are the credential's alone, so nobody else
// can add a user or token beside ours. A dir that exists must pass
// CheckTrusted: one that another session made (and narrowed to
// world:anyone:r, say) would hold its accounts beside ours, and writing
// into it fails with a bare NoAuth; the refusal says what to do.
func (st *Store) ensureDir(ctx context.Context, dir string) error {
	var missing []string
	for p := dir; p != "/" && p != "."; p = path.Dir(p) {
		ok, _, err := st.s.Exists(ctx, p)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		_, err := st.s.Create(ctx, missing[i], nil, zk.FlagPersistent, st.s.SecretACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return st.s.CheckTrusted(ctx, st.opts.Root, dir)
}

// RemoveUser deletes a user, its sessions and its tokens.
func (st *Store) RemoveUser(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	err := st.s.Retry(ctx, func() error { return st.s.Delete(ctx, st.userPath(name), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrNoUser, name)
	}
	if err != nil {
		return fmt.Errorf("auth: remove user %q: %w", name, err)
	}
	st.forget(name)
	if err := st.EndSessions(ctx, name); err != nil {
		return err
	}
	toks, err := st.Tokens(ctx)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if t.User == name {
			if err := st.RevokeToken(ctx, t.ID); err != nil && !errors.Is(err, ErrBadToken) {
				return err
			}
		}
	}
	return nil
}

// Users lists the users by name, without their hashes.
func (st *Store) Users(ctx context.Context) ([]Info, error) {
	names, err := st.children(ctx, st.usersDir())
	if err != nil {
		return nil, fmt.Errorf("auth: list users: %w", err)
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		u, err := st.read(ctx, n)
		if errors.Is(err, ErrNoUser) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Info{Name: u.Name, Role: u.Role, Created: u.Created})
	}
	return out, nil
}

func (st *Store) children(ctx context.Context, dir string) ([]string, error) {
	var names []string
	err := st.s.Retry(ctx, func() (err error) {
		names, _, err = st.s.Children(ctx, dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}

// get reads a node below the root after checking that only our
// credential could have written it.
func (st *Store) get(ctx context.Context, p string) ([]byte, error) {
	var data []byte
	err := st.s.Retry(ctx, func() (err error) {
		data, _, err = st.s.Get(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(data) > maxNode {
		return nil, fmt.Errorf("auth: %s holds %d bytes, more than a record's %d", p, len(data), maxNode)
	}
	if err := st.s.CheckTrusted(ctx, st.opts.Root, p); err != nil {
		return nil, err
	}
	return data, nil
}

// read reads a user from the tree (no cache).
func (st *Store) read(ctx context.Context, name string) (User, error) {
	if err := CheckName(name); err != nil {
		return User{}, fmt.Errorf("%w: %s", ErrNoUser, name)
	}
	data, err := st.get(ctx, st.userPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return User{}, fmt.Errorf("%w: %s", ErrNoUser, name)
	}
	if err != nil {
		return User{}, fmt.Errorf("auth: read user %q: %w", name, err)
	}
	var u User
	if err := json.Unmarshal(data, &u); err != nil || u.Name != name || roleRank[u.Role] == 0 || u.Hash == "" {
		return User{}, fmt.Errorf("auth: user %q: the record at %s does not decode (%v): re-add the user with --replace", name, st.userPath(name), err)
	}
	return u, nil
}

// User returns a user, from a cache at most CacheTTL old.
func (st *Store) User(ctx context.Context, name string) (User, error) {
	now := st.opts.Now()
	st.mu.Lock()
	c, ok := st.users[name]
	st.mu.Unlock()
	if ok && now.Sub(c.at) < st.opts.CacheTTL {
		return c.u, c.err
	}
	u, err := st.read(ctx, name)
	if err != nil && !errors.Is(err, ErrNoUser) {
		return u, err // a read failure is not cached
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.users) > 10000 {
		clear(st.users) // bound: only existing names are cached, but be safe
	}
	if err == nil || ok {
		st.users[name] = cachedUser{u: u, err: err, at: now}
	}
	return u, err
}

func (st *Store) forget(name string) {
	st.mu.Lock()
	delete(st.users, name)
	st.mu.Unlock()
}

// dummyHash is compared against when the user does not exist, so that
// a login takes as long for an unknown user as for a wrong password: a
// hash of the store's cost, the cost of the hashes it makes. It is made
// at the first unknown user, not at the start of every process.
func (st *Store) dummyHash() []byte {
	st.dummyOnce.Do(func() {
		st.dummy, _ = bcrypt.GenerateFromPassword([]byte("shepherd-no-such-user"), st.opts.BcryptCost)
	})
	return st.dummy
}

// Login checks a user name and password. Wrong name and wrong password
// are the same ErrBadLogin.
func (st *Store) Login(ctx context.Context, name string, password []byte) (User, error) {
	u, err := st.read(ctx, name)
	if errors.Is(err, ErrNoUser) {
		_ = st.opts.Compare(st.dummyHash(), password)
		return User{}, ErrBadLogin
	}
	if err != nil {
		return User{}, err
	}
	if st.opts.Compare([]byte(u.Hash), password) != nil {
		return User{}, ErrBadLogin
	}
	return u, nil
}

// Token format: shp_<id>_<secret>; the id names the node, the secret is
// compared by its SHA-256.
const tokenPrefix = "shp_"

func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken creates an API token for an existing user and returns it:
// the only time it is seen, as only its digest is stored.
func (st *Store) CreateToken(ctx context.Context, user, note string) (string, TokenInfo, error) {
	if _, err := st.read(ctx, user); err != nil {
		return "", TokenInfo{}, err
	}
	if len(note) > 200 || strings.ContainsAny(note, "\r\n") {
		return "", TokenInfo{}, fmt.Errorf("%w: token note: want one line of at most 200 bytes", ErrInvalid)
	}
	id := rand.Text()[:16]
	secret := rand.Text()
	ti := TokenInfo{Version: 1, ID: strings.ToLower(id), User: user, Note: note, Created: st.opts.Now().UTC(), Digest: digest(secret)}
	data, _ := json.Marshal(ti)
	err := st.s.Retry(ctx, func() error {
		if err := st.ensureDir(ctx, st.tokensDir()); err != nil {
			return err
		}
		_, err := st.s.Create(ctx, st.tokenPath(ti.ID), data, zk.FlagPersistent, st.s.SecretACL())
		return err
	})
	if err != nil {
		return "", TokenInfo{}, fmt.Errorf("auth: create token for %q: %w", user, err)
	}
	ti.Digest = ""
	return tokenPrefix + ti.ID + "_" + secret, ti, nil
}

// Token returns the user a token belongs to.
func (st *Store) Token(ctx context.Context, token string) (User, error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	id, secret, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != 16 || secret == "" || len(token) > 200 || !namePattern.MatchString(id) {
		return User{}, ErrBadToken
	}
	data, err := st.get(ctx, st.tokenPath(id))
	if errors.Is(err, zk.ErrNoNode) {
		return User{}, ErrBadToken
	}
	if err != nil {
		return User{}, fmt.Errorf("auth: read token %s: %w", id, err)
	}
	var ti TokenInfo
	if json.Unmarshal(data, &ti) != nil || subtle.ConstantTimeCompare([]byte(ti.Digest), []byte(digest(secret))) != 1 {
		return User{}, ErrBadToken
	}
	u, err := st.User(ctx, ti.User)
	if errors.Is(err, ErrNoUser) {
		return User{}, ErrBadToken
	}
	return u, err
}

// Tokens lists the tokens, without digests.
func (st *Store) Tokens(ctx context.Context) ([]TokenInfo, error) {
	ids, err := st.children(ctx, st.tokensDir())
	if err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	out := make([]TokenInfo, 0, len(ids))
	for _, id := range ids {
		data, err := st.get(ctx, st.tokenPath(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var ti TokenInfo
		if json.Unmarshal(data, &ti) != nil {
			continue
		}
		ti.Digest = ""
		out = append(out, ti)
	}
	return out, nil
}

// RevokeToken deletes a token by id.
func (st *Store) RevokeToken(ctx context.Context, id string) error {
	if !namePattern.MatchString(id) {
		return fmt.Errorf("%w: token id %q", ErrBadToken, id)
	}
	err := st.s.Retry(ctx, func() error { return st.s.Delete(ctx, st.tokenPath(id), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: no token %s", ErrBadToken, id)
	}
	return err
}

// SessionKey returns the key that signs session cookies, creating it on
// first use. Every console reads the same node, so a cookie one console
// issued is accepted by the others.
func (st *Store) SessionKey(ctx context.Context) ([]byte, error) {
	st.mu.Lock()
	key := st.key
	st.mu.Unlock()
	if key != nil {
		return key, nil
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	err := st.s.Retry(ctx, func() error {
		if err := st.ensureDir(ctx, st.opts.Root); err != nil {
			return err
		}
		_, err := st.s.Create(ctx, st.keyPath(), fresh, zk.FlagPersistent, st.s.SecretACL())
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("auth: create the session key %s: %w", st.keyPath(), err)
	}
	key, err = st.get(ctx, st.keyPath())
	if err != nil {
		return nil, fmt.Errorf("auth: read the session key %s: %w", st.keyPath(), err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("auth: the session key %s holds %d bytes, want 32: delete it to have a new one made", st.keyPath(), len(key))
	}
	st.mu.Lock()
	st.key = key
	st.mu.Unlock()
	return key, nil
}
