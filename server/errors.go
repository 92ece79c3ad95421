package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/monitor/series"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// apiError is the one error shape of the API:
// {"error": {"code": "...", "message": "..."}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

func errorf(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

// classify maps the domain packages' errors to statuses.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	for _, m := range []struct {
		target error
		status int
		code   string
	}{
		{core.ErrNoTask, http.StatusNotFound, "not_found"},
		{scheduler.ErrNoSuchJob, http.StatusNotFound, "not_found"},
		{core.ErrVersionConflict, http.StatusPreconditionFailed, "version_conflict"},
		{core.ErrInvalidSpec, http.StatusBadRequest, "invalid"},
		{scheduler.ErrInvalidJob, http.StatusBadRequest, "invalid"},
		{scheduler.ErrInvalidParams, http.StatusBadRequest, "invalid"},
		{scheduler.ErrRunDone, http.StatusConflict, "exists"},
		{auth.ErrInvalid, http.StatusBadRequest, "invalid"},
		{scheduler.ErrVersionConflict, http.StatusPreconditionFailed, "version_conflict"},
		{core.ErrTaskExists, http.StatusConflict, "exists"},
		{scheduler.ErrJobExists, http.StatusConflict, "exists"},
		{auth.ErrUserExists, http.StatusConflict, "exists"},
		{core.ErrTaskBusy, http.StatusConflict, "busy"},
		{core.ErrNoStandby, http.StatusConflict, "no_standby"},
		{core.ErrPositionBehind, http.StatusConflict, "position_behind"},
		{core.ErrPositionUnordered, http.StatusConflict, "position_unordered"},
		{core.ErrPositionNotOnSource, http.StatusConflict, "position_not_on_source"},
		{core.ErrNoFailure, http.StatusConflict, "no_failure"},
		{core.ErrNotCandidate, http.StatusBadRequest, "not_candidate"},
		{core.ErrVerifyUnsupported, http.StatusBadRequest, "unsupported"},
		{auth.ErrNoUser, http.StatusNotFound, "not_found"},
		{auth.ErrBadToken, http.StatusNotFound, "not_found"},
		{monitor.ErrNoSilence, http.StatusNotFound, "not_found"},
		{dns.ErrNotBlocked, http.StatusConflict, "not_blocked"},
		{dns.ErrInvalidName, http.StatusBadRequest, "invalid"},
		{monitor.ErrInvalidSilence, http.StatusBadRequest, "invalid"},
		{monitor.ErrSeriesName, http.StatusBadRequest, "invalid"},
		// The monitor's stored series does not decode: the coordination
		// tree answered with something no monitor writes.
		{series.ErrBadSeries, http.StatusBadGateway, "bad_series"},
	} {
		if errors.Is(err, m.target) {
			return errorf(m.status, m.code, msg)
		}
	}
	return errorf(http.StatusInternalServerError, "internal", msg)
}

// writeError answers with err in the API's shape, or for a page as text.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if !wantsJSON(r) {
		http.Error(w, ae.Message, ae.Status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{ae})
}

// wantsJSON: an API request, or a JSON one (a login from a script).
func wantsJSON(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		strings.Contains(r.Header.Get("Accept"), "application/json")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// maxBody bounds a request body: a task spec is a few kilobytes.
const maxBody = 256 << 10

// readJSON is the one decoder of every JSON request body. It takes the
// body only as application/json (415 otherwise: a form or a text/plain
// post is what a page of another site can make a browser send), at most
// maxBody bytes of it, exactly one JSON value (trailing data is refused,
// not ignored), no field v lacks, and each value as v's type has it: a
// port of 3306.9 is an error, not 3306.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := jsonContent(r, true); err != nil {
		return err
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "invalid", "request body: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, "invalid", "request body: data after the JSON value: send exactly one JSON document")
	}
	return nil
}

// jsonContent checks that r's body, if it may have one (a body is
// required with required), is declared application/json.
func jsonContent(r *http.Request, required bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && !required && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf("Content-Type %q: the API takes request bodies as application/json only", ct))
}

// requireJSONBodies refuses a change to the API whose body is not
// declared JSON, before anything else reads it: also on routes that read
// no body (start, stop), where a text/plain post would otherwise act.
func requireJSONBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mutating(r.Method) && strings.HasPrefix(r.URL.Path, "/api/") {
			if err := jsonContent(r, false); err != nil {
				writeError(w, r, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
