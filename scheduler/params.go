package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Run parameters: `ctl job run-now --param k=v` asks for a run with
// parameters, which the trigger carries to the schedulers, the command
// gets as SHEPHERD_PARAM_<k> and the result records (Result.Params).

// ParamEnvPrefix starts the environment variable of a run parameter:
// SHEPHERD_PARAM_<name>, the name as given.
const ParamEnvPrefix = "SHEPHERD_PARAM_"

// Bounds of a run's parameters: they travel in a trigger node and in the
// result, and become environment variables.
const (
	MaxParams          = 32
	MaxParamValueBytes = 4 << 10
	MaxParamsBytes     = 16 << 10
)

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ValidateParams checks run parameters: at most MaxParams, names of 1-64
// letters, digits and '_' not starting with a digit, values without NUL
// of at most MaxParamValueBytes, MaxParamsBytes in all. The error
// (ErrInvalidParams) names the parameter.
func ValidateParams(params map[string]string) error {
	if len(params) > MaxParams {
		return fmt.Errorf("%w: %d parameters: at most %d", ErrInvalidParams, len(params), MaxParams)
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	slices.Sort(names)
	total := 0
	for _, k := range names {
		v := params[k]
		switch {
		case !paramName.MatchString(k):
			return fmt.Errorf("%w: param %q: want 1-64 letters, digits or '_', not starting with a digit", ErrInvalidParams, k)
		case len(v) > MaxParamValueBytes:
			return fmt.Errorf("%w: param %s: value of %d bytes: at most %d", ErrInvalidParams, k, len(v), MaxParamValueBytes)
		case strings.ContainsRune(v, 0):
			return fmt.Errorf("%w: param %s: value holds a NUL byte", ErrInvalidParams, k)
		}
		total += len(k) + len(v)
	}
	if total > MaxParamsBytes {
		return fmt.Errorf("%w: %d bytes of parameters: at most %d", ErrInvalidParams, total, MaxParamsBytes)
	}
	return nil
}

// ParseParam reads one k=v of `run-now --param`.
func ParseParam(kv string) (k, v string, err error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", fmt.Errorf("%w: param %q: want NAME=value", ErrInvalidParams, kv)
	}
	return k, v, nil
}

// triggerDoc is the data of /scheduler/triggers/<job>@<run-key>: a run-now
// request. Triggers written before parameters existed hold only the
// scheduled time as RFC 3339 text, which decodeTrigger still reads.
type triggerDoc struct {
	Version   int               `json:"version"`
	Scheduled time.Time         `json:"scheduled"`
	Params    map[string]string `json:"params,omitempty"`
}

// decodeTrigger reads a trigger node's data; a document that does not
// decode or whose parameters are invalid is an error (the trigger is
// refused: running it without its parameters would not be the run asked
// for).
func decodeTrigger(data []byte) (triggerDoc, error) {
	if t, err := time.Parse(time.RFC3339Nano, string(data)); err == nil {
		return triggerDoc{Version: 1, Scheduled: t}, nil
	}
	var tr triggerDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		return triggerDoc{}, fmt.Errorf("%w: trigger: %v", ErrInvalidParams, err)
	}
	if tr.Scheduled.IsZero() {
		return triggerDoc{}, fmt.Errorf("%w: trigger: no scheduled time", ErrInvalidParams)
	}
	return tr, ValidateParams(tr.Params)
}

// paramEnv is the environment of a run's parameters, by name.
func paramEnv(params map[string]string) []string {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, k := range names {
		out[i] = ParamEnvPrefix + k + "=" + params[k]
	}
	return out
}
