package ctl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// errBadACL reports an ACL argument that is not scheme:id:perms[,…].
var errBadACL = errors.New("ctl: bad ACL")

// permLetters are zkCli's permission letters, in the order it prints them.
var permLetters = []struct {
	letter byte
	perm   int32
}{
	{'c', zk.PermCreate},
	{'d', zk.PermDelete},
	{'r', zk.PermRead},
	{'w', zk.PermWrite},
	{'a', zk.PermAdmin},
}

// parseACL parses zkCli's ACL syntax: comma-separated scheme:id:perms,
// where perms are letters of cdrwa and the id may itself hold colons
// (digest:user:hash, ip:fe80::1). zkCli skips the entries it cannot read;
// ctl refuses the whole argument instead, so that a typo cannot leave a
// node with a narrower ACL than meant.
func parseACL(s string) ([]zk.ACL, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty; want scheme:id:perms[,scheme:id:perms…], e.g. world:anyone:cdrwa", errBadACL)
	}
	var acl []zk.ACL
	for _, entry := range strings.Split(s, ",") {
		first, last := strings.IndexByte(entry, ':'), strings.LastIndexByte(entry, ':')
		if first < 0 || first == last {
			return nil, fmt.Errorf("%w %q: want scheme:id:perms, e.g. world:anyone:cdrwa or digest:user:base64hash:rw", errBadACL, entry)
		}
		perms, err := parsePerms(entry[last+1:])
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", errBadACL, entry, err)
		}
		acl = append(acl, zk.ACL{Scheme: entry[:first], ID: entry[first+1 : last], Perms: perms})
	}
	return acl, nil
}

// parsePerms reads permission letters, such as "cdrwa" or "rw".
func parsePerms(s string) (int32, error) {
	if s == "" {
		return 0, errors.New("no permissions: give letters of cdrwa")
	}
	var perms int32
next:
	for i := 0; i < len(s); i++ {
		for _, p := range permLetters {
			if s[i] == p.letter {
				perms |= p.perm
				continue next
			}
		}
		return 0, fmt.Errorf("unknown permission %q: use letters of cdrwa (create, delete, read, write, admin)", s[i])
	}
	return perms, nil
}

// permString writes perms as zkCli does: the letters of cdrwa present.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range permLetters {
		if perms&p.perm != 0 {
			b.WriteByte(p.letter)
		}
	}
	return b.String()
}

// jsonACL is one ACL entry in --json output and in dump files.
type jsonACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

func toJSONACL(acl []zk.ACL) []jsonACL {
	out := make([]jsonACL, len(acl))
	for i, a := range acl {
		out[i] = jsonACL{Scheme: a.Scheme, ID: a.ID, Perms: permString(a.Perms)}
	}
	return out
}

func fromJSONACL(acl []jsonACL) ([]zk.ACL, error) {
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		perms, err := parsePerms(a.Perms)
		if err != nil {
			return nil, fmt.Errorf("%w %s:%s: %v", errBadACL, a.Scheme, a.ID, err)
		}
		if a.Scheme == "" {
			return nil, fmt.Errorf("%w: entry %d has no scheme", errBadACL, i)
		}
		out[i] = zk.ACL{Scheme: a.Scheme, ID: a.ID, Perms: perms}
	}
	return out, nil
}
