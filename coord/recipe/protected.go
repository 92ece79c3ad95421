package recipe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// protectedPrefix starts the last segment of a protected node's name, as
// in Curator: _c_<uuid>-<name>.
const protectedPrefix = "_c_"

// CreateProtected creates a node like Create, but names it
// _c_<uuid>-<last segment of path> (Curator's "protection"), and retries
// per the session's policy. A create cut off by a connection loss may have
// succeeded on the server; before trying again, CreateProtected looks for
// a child bearing its uuid and returns that one, so a retried create never
// leaves a second node behind. An ephemeral node found from a session that
// has since been lost is deleted and created again in the live session.
//
// Sequential nodes get their sequence number after the name, as usual:
// CreateProtected(ctx, "/locks/job/lock-", nil, zk.FlagEphemeralSequential,
// nil) returns /locks/job/_c_<uuid>-lock-0000000007.
func (s *Session) CreateProtected(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if _, err := s.checkPath("create protected", path); err != nil {
		return "", err
	}
	if path == "/" {
		return "", fmt.Errorf("recipe: create protected /: %w", zk.ErrNodeExists)
	}
	dir, name := zpath.Split(path)
	marker := protectedPrefix + newUUID() + "-"
	return s.createMarked(ctx, dir, marker, marker+name, data, flags, acl, false)
}

// noParents tells createMarkedDir not to create a missing directory.
const noParents int32 = -1

// createMarked creates dir/name, where name starts with marker, unique to
// this call; see CreateProtected. With parents, a missing dir is created
// as containers, as Curator does.
func (s *Session) createMarked(ctx context.Context, dir, marker, name string, data []byte, flags int32, acl []zk.ACL, parents bool) (string, error) {
	dirFlag := noParents
	if parents {
		dirFlag = zk.FlagContainer
	}
	return s.createMarkedDir(ctx, dir, marker, name, data, flags, acl, dirFlag)
}

// createMarkedDir is createMarked creating a missing dir and its missing
// ancestors with dirFlag, zk.FlagContainer or zk.FlagPersistent, unless it
// is noParents.
func (s *Session) createMarkedDir(ctx context.Context, dir, marker, name string, data []byte, flags int32, acl []zk.ACL, parents int32) (string, error) {
	find := func(ctx context.Context) (string, error) { return s.findMarked(ctx, dir, marker, flags) }
	return s.createFinding(ctx, dir, name, data, flags, acl, parents, find)
}

// createFinding is createMarkedDir with find, instead of a marker, telling
// whether a create cut off by a connection loss succeeded: it returns the
// path of the node that create made, or "".
func (s *Session) createFinding(ctx context.Context, dir, name string, data []byte, flags int32, acl []zk.ACL, parents int32, find func(context.Context) (string, error)) (string, error) {
	var created string
	failed := false
	err := s.Retry(ctx, func() error {
		if failed {
			p, err := find(ctx)
			if err != nil || p != "" {
				created = p
				return err
			}
		}
		p, err := s.Create(ctx, zpath.Join(dir, name), data, flags, acl)
		// The server deletes an empty container at any time, possibly
		// between our creating it and creating in it; a few rounds settle
		// it unless someone deletes the directory on purpose.
		for i := 0; parents != noParents && i < 3 && errors.Is(err, zk.ErrNoNode); i++ {
			if err = s.ensureServerPath(ctx, s.root.toServer(dir), parents); err == nil {
				p, err = s.Create(ctx, zpath.Join(dir, name), data, flags, acl)
			}
		}
		failed = err != nil
		created = p
		return err
	})
	if err != nil {
		return "", err
	}
	return created, nil
}

// findMarked returns the path of the child of dir whose name starts with
// marker, or "" if there is none (or only a dead session's ephemeral one,
// which it deletes).
func (s *Session) findMarked(ctx context.Context, dir, marker string, flags int32) (string, error) {
	children, _, err := s.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, c := range children {
		if !strings.HasPrefix(c, marker) {
			continue
		}
		p := zpath.Join(dir, c)
		if flags&zk.FlagEphemeral == 0 {
			return p, nil
		}
		ok, st, err := s.Exists(ctx, p)
		if err != nil {
			return "", err
		}
		if ok && st.EphemeralOwner == s.ID() {
			return p, nil
		}
		if ok { // created by a session since lost; it would vanish under us
			if err := s.Delete(ctx, p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return "", err
			}
		}
	}
	return "", nil
}

// newUUID returns a random (version 4) UUID in its canonical text form,
// as java.util.UUID.randomUUID().toString() prints it.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
