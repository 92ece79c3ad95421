// Package authflag is the one way every Shepherd command takes its
// credential and ACL policy: the flags --auth, --auth-file, --read-acl,
// --trusted-writers and --insecure-open-acl (and their SHEPHERD_* variables), resolved into the
// recipe.Options every session is dialled with, and the warnings an open
// or insecure set-up prints at every start. The policy itself (what ACL
// nodes get, what is trusted) lives in coord/recipe; this package only
// reads the settings. See docs/security.md.
package authflag

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// ErrConflict: both --auth and --auth-file were given.
var ErrConflict = errors.New("authflag: --auth and --auth-file both given")

// Flag names, also the keys of the commands' YAML config files.
const (
	FlagAuth     = "auth"
	FlagAuthFile = "auth-file"
	FlagReadACL  = "read-acl"
	FlagWriters  = "trusted-writers"
	FlagInsecure = "insecure-open-acl"
)

// Flags are the security flags of a command.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: FlagAuth, EnvVars: []string{"SHEPHERD_AUTH"},
			Usage: "digest credential user:password (or digest:user:password); nodes created get its ACL (docs/security.md)"},
		&cli.StringFlag{Name: FlagAuthFile, EnvVars: []string{"SHEPHERD_AUTH_FILE"},
			Usage: "file holding the credential, one line user:password, mode 0600 (shepherd coord writes <data-dir>/admin.auth)"},
		&cli.StringSliceFlag{Name: FlagReadACL, EnvVars: []string{"SHEPHERD_READ_ACL"},
			Usage: "read-only identity added to the nodes created, e.g. digest:viewer:<hash from shepherd ctl digest viewer:pw>; repeatable"},
		TrustedWritersFlag(),
		&cli.BoolFlag{Name: FlagInsecure,
			Usage: "act on nodes an unauthenticated session could have written (refused otherwise); logged at start and on every refusal it overrides"},
	}
}

// TrustedWritersFlag is --trusted-writers, apart so that `shepherd up`,
// whose credential is its server's, takes it too.
func TrustedWritersFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: FlagWriters, EnvVars: []string{"SHEPHERD_TRUSTED_WRITERS"},
		Usage: "other identities whose nodes are trusted as this credential's, e.g. digest:team-b:<hash from shepherd ctl digest team-b:pw>; comma-separated or repeated (docs/security.md)"}
}

// Settings are the security flags as given.
type Settings struct {
	Auth           string   // user:password or digest:user:password
	AuthFile       string   // path of a credential file
	ReadACL        []string // scheme:id read-only identities
	TrustedWriters []string // digest:user:hash identities trusted as writers
	Insecure       bool     // --insecure-open-acl
}

// FromContext reads the Settings from the flags of Flags.
func FromContext(c *cli.Context) Settings {
	return Settings{
		Auth:           c.String(FlagAuth),
		AuthFile:       c.String(FlagAuthFile),
		ReadACL:        c.StringSlice(FlagReadACL),
		TrustedWriters: c.StringSlice(FlagWriters),
		Insecure:       c.Bool(FlagInsecure),
	}
}

// Apply checks the settings and sets the credential and policy fields of
// o. Errors name the flag.
func (st Settings) Apply(o *recipe.Options) error {
	switch {
	case st.Auth != "" && st.AuthFile != "":
		return fmt.Errorf("%w: give one (SHEPHERD_AUTH and SHEPHERD_AUTH_FILE set them too)", ErrConflict)
	case st.Auth != "":
		c, err := recipe.ParseCredential(st.Auth)
		if err != nil {
			return fmt.Errorf("--%s: %w", FlagAuth, err)
		}
		o.Auth = c.Auth()
	case st.AuthFile != "":
		c, err := recipe.ReadCredentialFile(st.AuthFile)
		if err != nil {
			return fmt.Errorf("--%s: %w", FlagAuthFile, err)
		}
		o.Auth = c.Auth()
	}
	o.ReadACL = nil
	for _, s := range st.ReadACL {
		a, err := recipe.ParseReadACL(s)
		if err != nil {
			return fmt.Errorf("--%s: %w", FlagReadACL, err)
		}
		o.ReadACL = append(o.ReadACL, a)
	}
	if len(o.ReadACL) > 0 && o.Auth == "" {
		return fmt.Errorf("--%s without a credential: nodes would stay world-writable; give --%s or --%s too", FlagReadACL, FlagAuth, FlagAuthFile)
	}
	o.TrustedWriters = nil
	for _, s := range st.TrustedWriters {
		a, err := recipe.ParseTrustedWriter(s)
		if err != nil {
			return fmt.Errorf("--%s: %w", FlagWriters, err)
		}
		o.TrustedWriters = append(o.TrustedWriters, a)
	}
	if len(o.TrustedWriters) > 0 && o.Auth == "" {
		return fmt.Errorf("--%s without a credential: a process without one trusts nothing (its nodes are world-writable); give --%s or --%s too", FlagWriters, FlagAuth, FlagAuthFile)
	}
	o.InsecureOpenACL = st.Insecure
	return nil
}

// Warn logs, at the start of a process, what is insecure about o: an
// open cluster (no credential: every node it creates is world-writable,
// and every node it would act on is refused) and the opt-out flag.
func Warn(log *slog.Logger, process string, o recipe.Options) {
	if o.Auth == "" {
		log.Warn("OPEN CLUSTER: no credential given (--auth, --auth-file, SHEPHERD_AUTH or SHEPHERD_AUTH_FILE): "+
			"nodes this process creates are world-writable, and the jobs, tasks and sources it finds are refused. "+
			"Pass the coordination server's admin.auth with --auth-file (docs/security.md)", "process", process)
	}
	if o.InsecureOpenACL {
		log.Warn("INSECURE: --insecure-open-acl given: this process runs commands, connects to databases and reads files named by nodes "+
			"any client of the coordination service could have written", "process", process)
	}
	if o.Auth != "" {
		c, _ := recipe.ParseCredential(o.Auth)
		log.Info("authenticated", "process", process, "identity", c.String(), "readers", aclIDs(o.ReadACL), "trusted_writers", aclIDs(o.TrustedWriters))
	}
}

func aclIDs(acl []zk.ACL) []string {
	out := make([]string, len(acl))
	for i, a := range acl {
		out[i] = a.Scheme + ":" + a.ID
	}
	return out
}

// Options applies st to o, logs the start-up warnings of process (Warn)
// and returns the options to dial with.
func (st Settings) Options(log *slog.Logger, process string, o recipe.Options) (recipe.Options, error) {
	if err := st.Apply(&o); err != nil {
		return o, fmt.Errorf("%s: %w", process, err)
	}
	Warn(log, process, o)
	return o, nil
}
