package server

import (
	"net/http"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// The DNS registry's view and actions: the snapshot's services section,
// and block and unblock through dns.Admin, as `ctl service block` and
// `unblock` do, recorded with the same action names.

func (s *Server) serviceRoutes() {
	s.handle("GET /api/v1/services", auth.Viewer, s.fromSnapshot(func(snap *Snapshot) map[string]any {
		return map[string]any{"services": snap.Services, "error": snap.Errors[cluster.SectionServices]}
	}))
	s.handle("POST /api/v1/services/{app}/{domain}/{addr}/block", auth.Operator, s.apiServiceBlock(true))
	s.handle("POST /api/v1/services/{app}/{domain}/{addr}/unblock", auth.Operator, s.apiServiceBlock(false))
}

// serviceBlock is the optional body of a block: why.
type serviceBlock struct {
	Reason string `json:"reason"`
}

func (s *Server) apiServiceBlock(block bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		n, err := dns.NewName(r.PathValue("app"), r.PathValue("domain"))
		if err != nil {
			return errorf(http.StatusBadRequest, "invalid", err.Error())
		}
		addr, err := dns.ParseAddr(r.PathValue("addr"))
		if err != nil {
			return errorf(http.StatusBadRequest, "invalid", err.Error())
		}
		var req serviceBlock
		if r.ContentLength != 0 {
			if err := readJSON(w, r, &req); err != nil {
				return err
			}
		}
		if len(req.Reason) > 256 {
			return errorf(http.StatusBadRequest, "invalid", "reason: at most 256 bytes")
		}
		a := dns.NewAdmin(s.deps.Session)
		target := "service/" + n.String() + "/" + addr.String()
		if block {
			before, err := a.Block(r.Context(), n, addr, p.User+" via console", req.Reason)
			s.record(r, p, "service.block", target, before, map[string]string{"reason": req.Reason}, err)
			if err != nil {
				return err
			}
		} else {
			before, err := a.Unblock(r.Context(), n, addr)
			s.record(r, p, "service.unblock", target, before, nil, err)
			if err != nil {
				return err
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"app": n.App, "domain": n.Domain, "addr": addr.String(), "blocked": block})
		return nil
	}
}
