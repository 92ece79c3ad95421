package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// refreshServices puts the registry as read now into the console's feed.
func (c *console) refreshServices() {
	c.t.Helper()
	services, err := dns.NewAdmin(c.session).Services(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	next := *c.feed.Latest()
	next.ReadAt, next.Services = time.Now().UTC(), services
	c.feed.Set(&next)
}

// TestServicesThroughTheAPIAndPage: viewers see the DNS names (API and
// page); operators block and unblock an address, as ctl service block
// does, each recorded in the audit log; viewers may not.
func TestServicesThroughTheAPIAndPage(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		ctx := context.Background()
		n, _ := dns.NewName("app1", "api.svc.example")
		addr, _ := dns.ParseAddr("10.0.0.1:8080")
		if _, err := dns.Register(ctx, c.session, n, dns.Registration{Addr: addr, Weight: 3}); err != nil {
			t.Fatal(err)
		}
		c.refreshServices()

		viewer, op := c.as("viewer"), c.as("operator")
		st, body := viewer.do("GET", "/api/v1/services", nil, nil)
		var got struct {
			Services []dns.ServiceStatus `json:"services"`
		}
		if err := json.Unmarshal([]byte(body), &got); st != http.StatusOK || err != nil || len(got.Services) != 1 || got.Services[0].Served != 1 || got.Services[0].Addresses[0].Weight != 3 {
			t.Fatalf("GET /api/v1/services: %d %s", st, body)
		}
		if st, page := viewer.do("GET", "/services", nil, nil); st != http.StatusOK || !strings.Contains(page, "10.0.0.1:8080") || strings.Contains(page, "/block") {
			t.Errorf("services page for a viewer: %d, want the address and no block button:\n%s", st, page)
		}
		if st, page := op.do("GET", "/services", nil, nil); st != http.StatusOK || !strings.Contains(page, `data-action="/api/v1/services/app1/api.svc.example/10.0.0.1:8080/block"`) {
			t.Errorf("services page for an operator: %d, want a block button:\n%s", st, page)
		}

		block := "/api/v1/services/app1/api.svc.example/10.0.0.1:8080/block"
		if st, _ := viewer.do("POST", block, map[string]string{}, nil); st != http.StatusForbidden {
			t.Errorf("a viewer blocks: %d, want 403", st)
		}
		if st, body := op.do("POST", block, map[string]string{"reason": "upgrade"}, nil); st != http.StatusOK {
			t.Fatalf("block: %d %s", st, body)
		}
		s, err := dns.NewAdmin(c.session).Service(ctx, n)
		if err != nil || s.Served != 0 || s.Addresses[0].Blocked == nil || s.Addresses[0].Blocked.Reason != "upgrade" || !strings.HasPrefix(s.Addresses[0].Blocked.By, "operator") {
			t.Fatalf("after block: %+v %v", s, err)
		}
		c.refreshServices()
		if _, page := op.do("GET", "/services", nil, nil); !strings.Contains(page, "/unblock") || !strings.Contains(page, "upgrade (by operator") {
			t.Errorf("services page after block lacks unblock and the reason:\n%s", page)
		}
		unblock := strings.TrimSuffix(block, "/block") + "/unblock"
		if st, body := op.do("POST", unblock, map[string]string{}, nil); st != http.StatusOK {
			t.Fatalf("unblock: %d %s", st, body)
		}
		if st, body := op.do("POST", unblock, map[string]string{}, nil); st != http.StatusConflict || !strings.Contains(body, "not_blocked") {
			t.Errorf("unblock twice: %d %s, want 409 not_blocked", st, body)
		}
		if st, body := op.do("POST", "/api/v1/services/app1/api.svc.example/host:80/block", map[string]string{}, nil); st != http.StatusBadRequest {
			t.Errorf("block a host name: %d %s, want 400", st, body)
		}

		es, err := audit.New(c.session, auth.AuditDir, audit.Options{}).List(ctx, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range es {
			if strings.HasPrefix(e.Action, "service.") {
				actions = append(actions, fmt.Sprintf("%s %s %s %v", e.Action, e.Target, e.User, e.Error != ""))
			}
		}
		want := []string{ // newest first
			"service.unblock service/app1/api.svc.example/10.0.0.1:8080 operator true",
			"service.unblock service/app1/api.svc.example/10.0.0.1:8080 operator false",
			"service.block service/app1/api.svc.example/10.0.0.1:8080 operator false",
		}
		if strings.Join(actions, "\n") != strings.Join(want, "\n") {
			t.Errorf("audited:\n%s\nwant:\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestBrowserServices: an operator blocks an address from the DNS page
// and unblocks it; the page, read from the cluster, shows each state.
func TestBrowserServices(t *testing.T) {
	ctx, _, s := browserCluster(t, "browser-services", "olga", auth.Operator, 3*time.Minute)
	n, _ := dns.NewName("app1", "api.svc.example")
	addr, _ := dns.ParseAddr("10.0.0.1:8080")
	if _, err := dns.Register(ctx, s, n, dns.Registration{Addr: addr}); err != nil {
		t.Fatal(err)
	}
	hs, _ := browserConsole(t, ctx, s, 300*time.Millisecond)
	b := newBrowser(t, ctx, hs.URL, screenshotDir(t))
	b.login("olga")
	b.run("open the DNS page", chromedp.Navigate(hs.URL+"/services"), chromedp.WaitVisible(chromedp.CSS("#services")))
	b.waitContains("#services", "10.0.0.1:8080")
	b.waitContains("#services", "served")
	// An action reloads the page (data-then); the snapshot after the
	// change may come later, so the page is read again until it shows it.
	act := func(what, sel, question string, want ...string) {
		t.Helper()
		// The page reloads after the action: the question is read before.
		if q := browserValue(b, "read the question", chromedp.Evaluate[string](`document.querySelector(`+"`"+sel+"`"+`).dataset.confirm`)); q != question {
			t.Errorf("%s asks %q, want %q", what, q, question)
		}
		b.acceptConfirm()
		browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__old = true`))
		b.run(what, chromedp.Click(chromedp.CSS(sel)))
		coordtest.WaitFor(t, 30*time.Second, what+": the page reloaded by the action", func() error {
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			defer cancel()
			old, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__old === true`))
			if err != nil {
				return err
			}
			if old {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		coordtest.WaitFor(t, 30*time.Second, what+": the page showing it", func() error {
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/services"), chromedp.WaitVisible(chromedp.CSS("#services"))); err != nil {
				return err
			}
			got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#services")))
			if err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					return fmt.Errorf("it reads %q", got)
				}
			}
			return nil
		})
	}
	act("block it", `#services button[data-action$="/block"]`, "Stop serving 10.0.0.1:8080 of api.svc.example?", "blocked", "Unblock")
	if st, err := dns.NewAdmin(s).Service(ctx, n); err != nil || st.Served != 0 || st.Addresses[0].Blocked == nil {
		t.Fatalf("after the block: %+v %v", st, err)
	}
	b.shot("services-blocked")
	act("unblock it", `#services button[data-action$="/unblock"]`, "Serve 10.0.0.1:8080 of api.svc.example again?", "served", "Block")
	b.run("open the audit log", chromedp.Navigate(hs.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	b.waitContains("#audit", "service.unblock")
	b.waitContains("#audit", "service.block")
}
