package ctl

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/server/auth"
)

// userCommand is `ctl user add|list|rm`: the accounts of the control
// console (shepherd server), stored through package server/auth.
func (r *runner) userCommand() *cli.Command {
	return &cli.Command{
		Name:      "user",
		Usage:     "manage the control console's users: add, list, rm",
		ArgsUsage: "add|list|rm [args]",
		Description: `  add --role viewer|operator|admin --password-file F [--replace] NAME
                  store a user with a bcrypt hash of the first line of F; with
                  --replace, the user's console sessions end (log in again)
  list            users and their roles (never hashes)
  rm NAME         remove a user, its console sessions and its API tokens

There is no default account: create the first admin with user add. The records live in
/shepherd/console/users, readable and writable by the --auth credential alone. See docs/console.md.`,
		Subcommands: []*cli.Command{{
			Name:      "add",
			Usage:     "add a user (or change its password or role with --replace)",
			ArgsUsage: "--role ROLE --password-file F NAME",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "role", Usage: "viewer, operator or admin (required)"},
				&cli.StringFlag{Name: "password-file", Usage: "file whose first line is the password, - for standard input (required)"},
				&cli.BoolFlag{Name: "replace", Usage: "change an existing user (ends its console sessions)"},
			},
			Action: r.userAdd,
		}, {
			Name:   "list",
			Usage:  "list users",
			Action: r.userList,
		}, {
			Name:      "rm",
			Usage:     "remove a user, its sessions and its tokens",
			ArgsUsage: "NAME",
			Action:    r.userRemove,
		}},
		Action: func(c *cli.Context) error {
			return usagef("user: missing or unknown verb: want add, list or rm")
		},
	}
}

// tokenCommand is `ctl token create|list|revoke`: the console's API tokens.
func (r *runner) tokenCommand() *cli.Command {
	return &cli.Command{
		Name:      "token",
		Usage:     "manage the control console's API tokens: create, list, revoke",
		ArgsUsage: "create|list|revoke [args]",
		Description: `  create --user NAME [--note TEXT]   print a new token once (only its SHA-256 is stored);
                                     clients send it as Authorization: Bearer <token>
  list                               token ids, users and notes
  revoke ID                          delete a token`,
		Subcommands: []*cli.Command{{
			Name:  "create",
			Usage: "create a token for a user and print it (once)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "user", Usage: "the user the token acts as, with its role (required)"},
				&cli.StringFlag{Name: "note", Usage: "what the token is for"},
			},
			Action: r.tokenCreate,
		}, {
			Name:   "list",
			Usage:  "list tokens",
			Action: r.tokenList,
		}, {
			Name:      "revoke",
			Usage:     "revoke a token by id",
			ArgsUsage: "ID",
			Action:    r.tokenRevoke,
		}},
		Action: func(c *cli.Context) error {
			return usagef("token: missing or unknown verb: want create, list or revoke")
		},
	}
}

func (r *runner) accounts() (*auth.Store, error) {
	s, err := r.session()
	if err != nil {
		return nil, err
	}
	return auth.NewStore(s, auth.Options{}), nil
}

func (r *runner) userAdd(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	if c.String("role") == "" || c.String("password-file") == "" {
		return usagef("user add: --role and --password-file are required, before the name (usage: %s)", usageLine(c))
	}
	role, err := auth.ParseRole(c.String("role"))
	if err != nil {
		return usagef("user add: --role: %v", err)
	}
	data, err := r.readInput("user add", c.String("password-file"), 4096)
	if err != nil {
		return err
	}
	pw, _, _ := bytes.Cut(data, []byte("\n"))
	pw = bytes.TrimSuffix(pw, []byte("\r"))
	st, err := r.accounts()
	if err != nil {
		return err
	}
	err = r.withTimeout(func(ctx context.Context) error { return st.AddUser(ctx, args[0], role, pw, c.Bool("replace")) })
	r.record("user.add", "user/"+args[0], nil, map[string]any{"role": c.String("role"), "replace": c.Bool("replace")}, err)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.env.Stdout, "user %s (%s) stored\n", args[0], role)
	return nil
}

func (r *runner) userList(c *cli.Context) error {
	return listAccounts(r, (*auth.Store).Users, func(u auth.Info) string {
		return fmt.Sprintf("%s\t%s\t%s", u.Name, u.Role, u.Created.In(r.env.Location).Format(time.RFC3339))
	})
}

// listAccounts prints what list reads, as JSON or a line each.
func listAccounts[T any](r *runner, list func(*auth.Store, context.Context) ([]T, error), line func(T) string) error {
	st, err := r.accounts()
	if err != nil {
		return err
	}
	var items []T
	if err := r.withTimeout(func(ctx context.Context) (err error) { items, err = list(st, ctx); return err }); err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, items)
	}
	for _, it := range items {
		fmt.Fprintln(r.env.Stdout, line(it))
	}
	return nil
}

func (r *runner) userRemove(c *cli.Context) error {
	return r.removeAccount(c, "user", (*auth.Store).RemoveUser)
}

// removeAccount removes the user or token its one argument names, of
// kind "user" or "token" (audited as user.remove or token.revoke).
func (r *runner) removeAccount(c *cli.Context, kind string, remove func(*auth.Store, context.Context, string) error) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	st, err := r.accounts()
	if err != nil {
		return err
	}
	err = r.withTimeout(func(ctx context.Context) error { return remove(st, ctx, args[0]) })
	r.record(map[string]string{"user": "user.remove", "token": "token.revoke"}[kind], kind+"/"+args[0], nil, nil, err)
	return err
}

func (r *runner) tokenCreate(c *cli.Context) error {
	if _, err := argsN(c, 0, 0); err != nil {
		return err
	}
	if c.String("user") == "" {
		return usagef("token create: --user is required")
	}
	st, err := r.accounts()
	if err != nil {
		return err
	}
	var tok string
	var ti auth.TokenInfo
	err = r.withTimeout(func(ctx context.Context) (err error) {
		tok, ti, err = st.CreateToken(ctx, c.String("user"), c.String("note"))
		return err
	})
	r.record("token.create", "token/"+ti.ID, nil, map[string]string{"user": c.String("user"), "note": c.String("note")}, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, struct {
			Token string `json:"token"`
			auth.TokenInfo
		}{tok, ti})
	}
	fmt.Fprintln(r.env.Stdout, tok)
	r.warn("token %s for %s: this is the only time it is shown; store it now", ti.ID, ti.User)
	return nil
}

func (r *runner) tokenList(c *cli.Context) error {
	return listAccounts(r, (*auth.Store).Tokens, func(t auth.TokenInfo) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", t.ID, t.User, t.Created.In(r.env.Location).Format(time.RFC3339), t.Note)
	})
}

func (r *runner) tokenRevoke(c *cli.Context) error {
	return r.removeAccount(c, "token", (*auth.Store).RevokeToken)
}

// withTimeout runs fn bounded by --timeout.
func (r *runner) withTimeout(fn func(ctx context.Context) error) error {
	ctx, cancel := r.opCtx()
	defer cancel()
	return fn(ctx)
}
