package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestValidateParams: names, counts and sizes are bounded; the error
// names the parameter.
func TestValidateParams(t *testing.T) {
	many := map[string]string{}
	for i := range MaxParams + 1 {
		many[fmt.Sprintf("p%d", i)] = "x"
	}
	big := map[string]string{}
	for i := range 5 {
		big[fmt.Sprintf("p%d", i)] = strings.Repeat("x", MaxParamValueBytes)
	}
	for _, tt := range []struct {
		params map[string]string
		want   string // empty: valid
	}{
		{nil, ""},
		{map[string]string{"day": "2026-11-22", "_x9": "", "MODE": "a=b c"}, ""},
		{map[string]string{"9lives": "x"}, `param "9lives"`},
		{map[string]string{"a-b": "x"}, `param "a-b"`},
		{map[string]string{"": "x"}, `param ""`},
		{map[string]string{strings.Repeat("a", 65): "x"}, "param"},
		{map[string]string{"v": strings.Repeat("x", MaxParamValueBytes+1)}, "param v: value of 4097 bytes: at most 4096"},
		{map[string]string{"v": "a\x00b"}, "param v: value holds a NUL byte"},
		{many, "33 parameters: at most 32"},
		{big, "bytes of parameters: at most 16384"},
	} {
		err := ValidateParams(tt.params)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateParams(%v) = %v, want valid", tt.params, err)
		case tt.want != "" && (!errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidateParams = %v, want ErrInvalidParams mentioning %q", err, tt.want)
		}
	}
	if _, _, err := ParseParam("novalue"); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("ParseParam(novalue) = %v", err)
	}
	if k, v, err := ParseParam("q=a=b"); k != "q" || v != "a=b" || err != nil {
		t.Errorf("ParseParam(q=a=b) = %q %q %v", k, v, err)
	}
}

// TestDecodeTrigger: the time of old triggers, the document with
// parameters, and what is refused.
func TestDecodeTrigger(t *testing.T) {
	at := time.Date(2026, 11, 25, 13, 1, 27, 405e6, time.UTC)
	if tr, err := decodeTrigger([]byte(at.Format(time.RFC3339Nano))); err != nil || !tr.Scheduled.Equal(at) || tr.Params != nil {
		t.Errorf("old trigger: %+v, %v", tr, err)
	}
	tr, err := decodeTrigger([]byte(`{"version":1,"scheduled":"2026-11-25T13:01:27.405Z","params":{"day":"x"}}`))
	if err != nil || !tr.Scheduled.Equal(at) || tr.Params["day"] != "x" {
		t.Errorf("trigger with params: %+v, %v", tr, err)
	}
	for _, bad := range []string{`{"version":1}`, `{"scheduled":"2026-11-25T13:01:27Z","params":{"a-b":"x"}}`, `{"scheduled":"2026-11-25T13:01:27Z","colour":1}`, `garbage`} {
		if _, err := decodeTrigger([]byte(bad)); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("decodeTrigger(%s) = %v, want ErrInvalidParams", bad, err)
		}
	}
	raw := storedState{triggers: map[string]storedNode{"j@manual-1": {data: []byte(`{"scheduled":"2026-11-25T13:01:27Z","params":{"1x":"y"}}`)}}}
	if st, refused := decideState(nil, raw); len(st.triggers) != 0 || !strings.Contains(refused[TriggersPath+"/j@manual-1"], `param "1x"`) {
		t.Errorf("a trigger with bad parameters: kept %v, refused %v; want it refused", st.triggers, refused)
	}
	dir := t.TempDir()
	env, err := commandEnv(Run{Params: map[string]string{"day": "2026-11-22", "Mode": "a b"}}, filepath.Join(dir, "r"), dir)
	if err != nil || !slices.Contains(env, "SHEPHERD_PARAM_day=2026-11-22") || !slices.Contains(env, "SHEPHERD_PARAM_Mode=a b") {
		t.Errorf("env %q (%v), want SHEPHERD_PARAM_day and SHEPHERD_PARAM_Mode", env, err)
	}
}

// TestRunParams: a run-now with parameters gives them to the command
// (SHEPHERD_PARAM_<name>) and to a Go function (Run.Params), and records
// them in the result; bad ones store no trigger.
func TestRunParams(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		cmd := appendJob("cmd", "@yearly", out, `echo "day=$SHEPHERD_PARAM_day mode=$SHEPHERD_PARAM_Mode" >> "$OUT"`)
		fn := Job{Name: "fn", Schedule: "@yearly", Func: "echo"}
		startScheduler(t, connect, Options{Jobs: []Job{cmd, fn}, Host: "a"}, map[string]JobFunc{
			"echo": func(ctx context.Context, run Run, log io.Writer) ([]byte, error) {
				return []byte(run.Params["day"]), nil
			},
		})
		obs := dial(t, connect)
		a := NewAdmin(obs)
		params := map[string]string{"day": "2026-11-22", "Mode": "full run"}
		for _, job := range []string{"cmd", "fn"} {
			key, err := a.TriggerRun(context.Background(), job, time.Now(), RunRequest{Params: params})
			if err != nil {
				t.Fatal(err)
			}
			r := awaitResult(t, obs, job, key)
			if r.Status != Succeeded || !maps.Equal(r.Params, params) {
				t.Errorf("%s: %+v, want succeeded with params %v", job, r, params)
			}
			if job == "fn" && string(r.Data) != "2026-11-22" {
				t.Errorf("fn's data %q, want the day parameter", r.Data)
			}
		}
		if got := lines(t, out); len(got) != 2 || got[1] != "day=2026-11-22_mode=full_run" {
			t.Errorf("effects %q, want the parameters", got)
		}
		if _, err := a.TriggerRun(context.Background(), "cmd", time.Now(), RunRequest{Params: map[string]string{"a-b": "x"}}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("TriggerRun with a bad name: %v, want ErrInvalidParams", err)
		}
		// The settled runs' triggers go; the refused one was never made.
		coordtest.WaitFor(t, 30*time.Second, "no trigger left", func() error {
			kids, _, err := obs.Children(context.Background(), TriggersPath)
			if err != nil || len(kids) != 0 {
				return fmt.Errorf("triggers %v (%v)", kids, err)
			}
			return nil
		})
	})
}
