package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// znodeView is one node as the read-only browser shows it: where it is
// in the tree, its stat and ACL, and its data only when the node is
// world-readable anyway. The console reads with the cluster's credential,
// which may read secrets (password hashes, task passwords, job
// environments); showing data it could read would hand them to anyone
// who may open the browser.
type znodeView struct {
	Path           string    `json:"path"`
	Version        int32     `json:"version"`
	CVersion       int32     `json:"cversion"`
	AVersion       int32     `json:"aversion"`
	Created        time.Time `json:"created"`
	Modified       time.Time `json:"modified"`
	EphemeralOwner string    `json:"ephemeralOwner,omitempty"`
	DataLength     int32     `json:"dataLength"`
	NumChildren    int32     `json:"numChildren"`
	ACL            []string  `json:"acl"`
	Children       []string  `json:"children"`
	MoreChildren   int       `json:"moreChildren,omitempty"`
	// Data is the node's data when world-readable and text; DataHidden
	// says why it is not shown otherwise.
	Data       string `json:"data,omitempty"`
	DataHidden string `json:"dataHidden,omitempty"`
}

const (
	maxChildrenShown = 1000
	maxDataShown     = 64 << 10
)

func (s *Server) apiZnode(w http.ResponseWriter, r *http.Request, p principal) error {
	v, err := s.readZnode(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) readZnode(r *http.Request) (znodeView, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	if len(p) > 1024 {
		return znodeView{}, errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("path of %d bytes: a znode path the browser shows is at most 1024", len(p)))
	}
	// ZooKeeper's own rules (no NUL, no control characters, no empty or
	// relative segments): a path the server would refuse is the caller's
	// mistake, not an internal error.
	if err := proto.ValidatePath(p, false); err != nil {
		return znodeView{}, errorf(http.StatusBadRequest, "invalid", err.Error()+": want an absolute znode path such as /mysql_replicator/tasks")
	}
	ctx, sess := r.Context(), s.deps.Session
	v := znodeView{Path: p}
	var data []byte
	var st *zk.Stat
	var acl []zk.ACL
	err := sess.Retry(ctx, func() (err error) {
		if acl, st, err = sess.GetACL(ctx, p); err != nil {
			return err
		}
		v.Children, _, err = sess.Children(ctx, p)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return v, errorf(http.StatusNotFound, "not_found", "no znode "+p)
	}
	if err != nil {
		return v, err
	}
	slices.Sort(v.Children)
	if len(v.Children) > maxChildrenShown {
		v.MoreChildren = len(v.Children) - maxChildrenShown
		v.Children = v.Children[:maxChildrenShown]
	}
	v.Version, v.CVersion, v.AVersion = st.Version, st.Cversion, st.Aversion
	v.Created, v.Modified = time.UnixMilli(st.Ctime).UTC(), time.UnixMilli(st.Mtime).UTC()
	v.DataLength, v.NumChildren = st.DataLength, st.NumChildren
	if st.EphemeralOwner != 0 {
		v.EphemeralOwner = fmt.Sprintf("0x%x", st.EphemeralOwner)
	}
	worldReadable := false
	for _, a := range acl {
		v.ACL = append(v.ACL, a.Scheme+":"+a.ID+":"+recipe.PermString(a.Perms))
		if a.Scheme == "world" && a.ID == "anyone" && a.Perms&zk.PermRead != 0 {
			worldReadable = true
		}
	}
	switch {
	case st.DataLength == 0:
	case !worldReadable:
		v.DataHidden = "not world-readable: the console does not show data its credential reads for it"
	case st.DataLength > maxDataShown:
		v.DataHidden = "larger than 64 KiB"
	default:
		err := sess.Retry(ctx, func() (err error) {
			data, _, err = sess.Get(ctx, p)
			return err
		})
		switch {
		case err != nil:
			v.DataHidden = "read failed: " + err.Error()
		case !utf8.Valid(data):
			v.DataHidden = "binary data"
		default:
			v.Data = string(data)
		}
	}
	return v, nil
}
