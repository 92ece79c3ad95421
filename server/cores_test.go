package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
)

// TestTaskFormStandbyFollowsTheLiveCores: the new-task form defaults to
// cold standby in group default only while a live core serves that group
// (as under `shepherd up`), else to hot; GET /api/v1/cores lists the live
// cores and says, for the standby chosen, whether a core would run the
// task or which core to start.
func TestTaskFormStandbyFollowsTheLiveCores(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	viewer := c.as("viewer")

	cores := func(query string) coresReport {
		t.Helper()
		st, body := viewer.do("GET", "/api/v1/cores"+query, nil, nil)
		if st != http.StatusOK {
			t.Fatalf("GET /api/v1/cores%s: %d %s", query, st, body)
		}
		var rep coresReport
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			t.Fatalf("GET /api/v1/cores%s: %v in %s", query, err, body)
		}
		return rep
	}
	check := func(query string, ok bool, note string) {
		t.Helper()
		rep := cores(query)
		if rep.Check == nil || rep.Check.OK != ok || !strings.Contains(rep.Check.Note, note) {
			t.Errorf("GET /api/v1/cores%s: check %+v, want ok %v and a note with %q", query, rep.Check, ok, note)
		}
	}
	// form reads the new-task form's standby mode, group and note.
	selected := regexp.MustCompile(`<option selected>(hot|cold)</option>`)
	group := regexp.MustCompile(`id="f-standby-group" value="([^"]*)"`)
	noteRE := regexp.MustCompile(`<p id="standby-note" class="(ok|bad)"[^>]*>([^<]*)</p>`)
	form := func() (mode, grp, class, note string) {
		t.Helper()
		st, body := admin.do("GET", "/new/task", nil, nil)
		if st != http.StatusOK {
			t.Fatalf("GET /new/task: %d %s", st, body)
		}
		m, g, n := selected.FindStringSubmatch(body), group.FindStringSubmatch(body), noteRE.FindStringSubmatch(body)
		if m == nil || g == nil || n == nil {
			t.Fatalf("the form lacks a selected standby mode, the group field or the note:\n%s", body)
		}
		return m[1], g[1], n[1], n[2]
	}

	// No core at all: hot standby, and the note says what to start.
	if rep := cores(""); len(rep.Groups) != 0 || rep.Default.Mode != core.ModeHot || rep.Check != nil {
		t.Errorf("without cores: %+v, want no groups, default hot, no check", rep)
	}
	if mode, grp, class, note := form(); mode != "hot" || grp != "" || class != "bad" || !strings.Contains(note, "start `shepherd core --task &lt;name&gt;`") {
		t.Errorf("form without cores: mode %q group %q note %s %q", mode, grp, class, note)
	}
	check("?mode=cold&group=default", false, "no core serves group default: start `shepherd core --group default`")
	check("?mode=hot&task=orders", false, "start `shepherd core --task orders`")
	check("?mode=cold", false, "needs a group")

	// A core serving group default (as under shepherd up): cold in
	// default, served; another group still warns.
	m, err := recipe.Join(t.Context(), c.session, c.admin.Layout().Cores("default"), "core1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep := cores(""); len(rep.Groups["default"]) != 1 || rep.Groups["default"][0] != "core1" ||
		rep.Default.Mode != core.ModeCold || rep.Default.Group != "default" {
		t.Errorf("with core1 in default: %+v", rep)
	}
	if mode, grp, class, note := form(); mode != "cold" || grp != "default" || class != "ok" || !strings.Contains(note, "core1") {
		t.Errorf("form with core1 in default: mode %q group %q note %s %q", mode, grp, class, note)
	}
	check("?mode=cold&group=default", true, "served by the live cores of group default: core1")
	check("?mode=cold&group=eu", false, "no core serves group eu: start `shepherd core --group eu`")
	check("?mode=hot&task=orders", false, "start `shepherd core --task orders`")

	// A hot task with a core registered for it is served.
	c.addOrders()
	c.refresh()
	snap := *c.feed.Latest()
	snap.Tasks = append([]core.TaskStatus(nil), snap.Tasks...)
	snap.Tasks[0].Instances = []core.Instance{{Name: "core2-0000000001", State: core.InstanceState{State: core.StateRunning}}}
	c.feed.Set(&snap)
	check("?mode=hot&task=orders", true, "served by the 1 core started with `--task orders`")

	// The core leaves: back to hot, with the warning.
	if err := m.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rep := cores(""); rep.Default.Mode != core.ModeHot || len(rep.Groups) != 0 {
		t.Errorf("after core1 left: %+v, want no groups, default hot", rep)
	}
	check("?mode=cold&group=default", false, "no core serves group default")
}
