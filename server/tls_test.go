package server

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTLSConsoleSendsHSTSAndHostCookie: under TLS the answers carry HSTS
// and the session cookie is __Host- prefixed (and works); without TLS the
// cookie keeps its name and there is no HSTS.
func TestTLSConsoleSendsHSTSAndHostCookie(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	hs := httptest.NewTLSServer(c.srv.Handler())
	defer hs.Close()
	jar, _ := cookiejar.New(nil)
	hc := hs.Client()
	hc.Jar = jar
	login := func(url string, hc *http.Client) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/login", strings.NewReader(`{"user":"viewer","password":"`+testPassword+`"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("login at %s: %v %v", url, res, err)
		}
		res.Body.Close()
		return res
	}
	res := login(hs.URL, hc)
	cookies := res.Cookies()
	if len(cookies) != 1 || cookies[0].Name != "__Host-shepherd_session" || !cookies[0].Secure || cookies[0].Path != "/" || cookies[0].Domain != "" {
		t.Fatalf("session cookie under TLS: %+v", cookies)
	}
	if h := res.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(h, "max-age=") {
		t.Fatalf("HSTS under TLS: %q", h)
	}
	me, err := hc.Get(hs.URL + "/api/v1/me")
	if err != nil || me.StatusCode != 200 {
		t.Fatalf("GET /api/v1/me with the __Host- cookie: %v %v", me, err)
	}
	me.Body.Close()

	plain := c.anonymous()
	res = login(c.http.URL, plain.hc)
	if cookies := res.Cookies(); len(cookies) != 1 || cookies[0].Name != "shepherd_session" || cookies[0].Secure {
		t.Fatalf("session cookie without TLS: %+v", cookies)
	}
	if h := res.Header.Get("Strict-Transport-Security"); h != "" {
		t.Fatalf("HSTS without TLS: %q", h)
	}
	if st, body := plain.do("GET", "/api/v1/me", nil, nil); st != 200 {
		t.Fatalf("GET /api/v1/me without TLS: %d %s", st, body)
	}
}
