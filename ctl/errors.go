package ctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// zkError is a server's answer to a request on path, worded as zkCli.sh
// words it so that operators can compare the two tools' output.
type zkError struct {
	path string
	err  error
}

// zkCliTexts are zkCli.sh's messages for the errors it words itself;
// "%s" is the path as the user gave it.
var zkCliTexts = []struct {
	err  error
	text string
}{
	{zk.ErrNoNode, "Node does not exist: %s"},
	{zk.ErrNodeExists, "Node already exists: %s"},
	{zk.ErrNotEmpty, "Node not empty: %s"},
	{zk.ErrBadVersion, "version No is not valid : %s"},
	{zk.ErrNoAuth, "Insufficient permission : %s"},
	{zk.ErrInvalidACL, "Acl is not valid : %s"},
	{zk.ErrBadArguments, "Argument is not valid : %s"},
	{zk.ErrNoChildrenForEphemerals, "Ephemerals cannot have children: %s"},
}

func (e *zkError) Error() string {
	for _, t := range zkCliTexts {
		if errors.Is(e.err, t.err) {
			return fmt.Sprintf(t.text, e.path)
		}
	}
	switch {
	case errors.Is(e.err, zk.ErrAuthFailed):
		return fmt.Sprintf("KeeperErrorCode = AuthFailed for %s: the server refused the --auth credential", e.path)
	case errors.Is(e.err, zk.ErrInvalidPath):
		return fmt.Sprintf("invalid path %s", e.path)
	case errors.Is(e.err, context.DeadlineExceeded):
		return fmt.Sprintf("%s: no answer within --timeout; the outcome of a write is unknown", e.path)
	case recipe.IsRetryable(e.err):
		return fmt.Sprintf("KeeperErrorCode = ConnectionLoss for %s: the connection to the server failed; the outcome of a write is unknown", e.path)
	case strings.Contains(e.err.Error(), "unknown error: -6"):
		// go-zookeeper has no error value for Unimplemented (-6): the
		// answer of a server without TTL nodes enabled.
		return fmt.Sprintf("KeeperErrorCode = Unimplemented for %s (TTL nodes need extendedTypesEnabled=true on an Apache ZooKeeper server)", e.path)
	}
	return fmt.Sprintf("%s: %v", e.path, e.err)
}

func (e *zkError) Unwrap() error { return e.err }

// code names the error as ZooKeeper's KeeperException.Code does, for
// --json error documents; "" when err is not a server's answer.
func (e *zkError) code() string {
	codes := []struct {
		err  error
		name string
	}{
		{zk.ErrNoNode, "NONODE"},
		{zk.ErrNodeExists, "NODEEXISTS"},
		{zk.ErrNotEmpty, "NOTEMPTY"},
		{zk.ErrBadVersion, "BADVERSION"},
		{zk.ErrNoAuth, "NOAUTH"},
		{zk.ErrInvalidACL, "INVALIDACL"},
		{zk.ErrBadArguments, "BADARGUMENTS"},
		{zk.ErrNoChildrenForEphemerals, "NOCHILDRENFOREPHEMERALS"},
		{zk.ErrAuthFailed, "AUTHFAILED"},
	}
	for _, c := range codes {
		if errors.Is(e.err, c.err) {
			return c.name
		}
	}
	if recipe.IsRetryable(e.err) {
		return "CONNECTIONLOSS"
	}
	return ""
}

// onPath wraps a failed request's error with the path it was about, or
// returns nil. Errors that are not about the request (the run was
// interrupted) pass unchanged.
func onPath(path string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &zkError{path: path, err: err}
}
