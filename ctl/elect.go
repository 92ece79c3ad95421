package ctl

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

func (r *runner) electCommand() *cli.Command {
	return &cli.Command{
		Name:      "elect",
		Usage:     "run a command while leader of an election",
		ArgsUsage: "[--wait duration] [--id name] path -- command [args…]",
		Description: `Stands as a candidate in the election at path (coord/recipe's Election, kazoo's
node layout), runs the command once elected, and resigns when it ends; ctl exits with
the command's status. SIGINT and SIGTERM are forwarded to the command. If leadership is
lost while the command runs (session expired, node deleted), the command is killed and
ctl exits 75. The command sees SHEPHERD_ELECTION_PATH, SHEPHERD_ELECTION_NODE and
SHEPHERD_FENCING_TOKEN (grows with every term, for fencing writes) in its environment.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "wait", Usage: "give up (exit 1) if not elected within this long (0: wait forever)"},
			&cli.StringFlag{Name: "id", Usage: "candidate identity stored in its node (default host:pid)"},
		},
		Action: r.elect,
	}
}

func (r *runner) elect(c *cli.Context) error {
	p, argv, err := heldArgs(c)
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	if wait < 0 {
		return usagef("elect: --wait %v: want a positive duration, or 0 to wait forever", wait)
	}
	id := c.String("id")
	if id == "" {
		id = holderID()
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	what := "leadership of " + p
	e := recipe.NewElection(s, p, id)
	ctx, cancel := r.waitCtx(wait)
	err = e.Campaign(ctx)
	cancel()
	if err != nil {
		return r.acquireError(what, p, wait, err)
	}
	runErr := r.runHeld(what, e.Lost(), argv, []string{
		"SHEPHERD_ELECTION_PATH=" + p,
		"SHEPHERD_ELECTION_NODE=" + e.Node(),
		fmt.Sprintf("SHEPHERD_FENCING_TOKEN=%d", e.Token()),
	})
	if err := e.Resign(); err != nil && !isLost(runErr) {
		r.warn("%s: resign: %v", what, err)
	}
	return runErr
}
