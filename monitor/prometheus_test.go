package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

const rulesFile = "../examples/prometheus/shepherd-rules.yml"

func requireBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	why := ""
	if err != nil {
		why = fmt.Sprintf("%s not found (Debian package prometheus; scripts/install-deps.sh installs it): %v", name, err)
	}
	testpeer.Require(t, name, err == nil, why)
	return p
}

// TestPrometheusRulesFilePassesPromtool runs promtool's checks and the
// unit tests shipped beside the rules file.
func TestPrometheusRulesFilePassesPromtool(t *testing.T) {
	promtool := requireBinary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", "../examples/prometheus/shepherd-rules-test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestPrometheusRulesFileHasEveryRule: the file's alert names are the
// built-in rules' names, each with its unit test.
func TestPrometheusRulesFileHasEveryRule(t *testing.T) {
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var inFile []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if !slices.Contains(inFile, r.Alert) {
				inFile = append(inFile, r.Alert)
			}
			if r.Labels["severity"] == "" {
				t.Errorf("%s has no severity label", r.Alert)
			}
		}
	}
	tests, err := os.ReadFile("../examples/prometheus/shepherd-rules-test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var builtin []string
	for _, r := range Rules() {
		builtin = append(builtin, r.Name)
		if !strings.Contains(string(tests), "alertname: "+r.Name+",") && !strings.Contains(string(tests), "alertname: "+r.Name+"\n") {
			t.Errorf("%s has no promtool unit test", r.Name)
		}
	}
	slices.Sort(inFile)
	slices.Sort(builtin)
	if !slices.Equal(inFile, builtin) {
		t.Fatalf("rules file has %v, the monitor %v", inFile, builtin)
	}
}

// TestPrometheusScrapesTheMonitor: a real Prometheus scrapes the
// monitor's endpoint and sees the cluster-wide gauges.
func TestPrometheusScrapesTheMonitor(t *testing.T) {
	prom := requireBinary(t, "prometheus")
	tg := targets[0] // the endpoint does not depend on the server
	tg.Require(t)
	connect := tg.Addr + "/" + fmt.Sprintf("prom-%d", time.Now().UnixNano())
	r := newReceiver(t)
	m, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), cluster.NewFixed(failedSnap()), testConfig(r), Deps{})
	mux := http.NewServeMux()
	m.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.waitCount(t, RuleTaskFailed, StatusFiring, 1)

	dir := t.TempDir()
	conf := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [%q]\nscrape_configs:\n  - job_name: shepherd\n    static_configs: [{targets: [%q]}]\n",
		mustAbs(t, rulesFile), strings.TrimPrefix(srv.URL, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testpeer.FreePort(t)
	startDaemon(t, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	query := func(q string) (string, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", port, q))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var res struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(data, &res); err != nil {
			return "", fmt.Errorf("%s: %w", data, err)
		}
		if len(res.Data.Result) == 0 {
			return "", fmt.Errorf("no result for %s", q)
		}
		return fmt.Sprint(res.Data.Result[0].Metric, " ", res.Data.Result[0].Value[1]), nil
	}
	coordtest.WaitFor(t, 60*time.Second, "prometheus sees shepherd_task_failed", func() error {
		v, err := query(`shepherd_task_failed`)
		if err != nil {
			return err
		}
		if !strings.Contains(v, "task:orders") || !strings.HasSuffix(v, " 1") {
			return fmt.Errorf("got %s", v)
		}
		return nil
	})
	// The shipped rules, evaluated by Prometheus over the scraped gauges,
	// fire the rule the monitor fired.
	coordtest.WaitFor(t, 60*time.Second, "prometheus fires TaskFailed", func() error {
		_, err := query(`ALERTS{alertname="TaskFailed",alertstate="firing"}`)
		return err
	})
}

// startDaemon runs a server binary until the test ends; its output is
// shown if the test fails.
func startDaemon(t *testing.T, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), log.String())
		}
	})
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAlertmanagerTakesTheAlertmanagerFormat: the webhook's alertmanager
// format is accepted by a real Alertmanager's POST /api/v2/alerts, which
// then lists the alert with its labels, and sees it end when it resolves.
func TestAlertmanagerTakesTheAlertmanagerFormat(t *testing.T) {
	am := requireBinary(t, "prometheus-alertmanager")
	tg := targets[0]
	tg.Require(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "am.yml"), []byte("route: {receiver: none}\nreceivers: [{name: none}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testpeer.FreePort(t)
	startDaemon(t, am, "--config.file="+filepath.Join(dir, "am.yml"), "--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=")
	base := fmt.Sprintf("http://127.0.0.1:%d/api/v2", port)
	// alerts returns Alertmanager's TaskFailed alerts that have not ended.
	alerts := func() ([]map[string]any, error) {
		resp, err := http.Get(base + "/alerts")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var all []struct {
			Labels map[string]string `json:"labels"`
			EndsAt time.Time         `json:"endsAt"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
			return nil, err
		}
		var out []map[string]any
		for _, a := range all {
			if a.Labels["alertname"] == RuleTaskFailed && a.EndsAt.After(time.Now()) {
				out = append(out, map[string]any{"labels": a.Labels})
			}
		}
		return out, nil
	}
	coordtest.WaitFor(t, 30*time.Second, "alertmanager up", func() error {
		_, err := alerts()
		return err
	})

	feed := cluster.NewFixed(failedSnap())
	cfg := DefaultConfig()
	cfg.Interval = 100 * time.Millisecond
	cfg.Webhooks = []WebhookConfig{{URL: base + "/alerts", Format: FormatAlertmanager}}
	connect := tg.Addr + "/" + fmt.Sprintf("am-%d", time.Now().UnixNano())
	m, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
	coordtest.WaitFor(t, 30*time.Second, "alertmanager lists TaskFailed", func() error {
		got, err := alerts()
		if err != nil {
			return err
		}
		if len(got) != 1 || fmt.Sprint(got[0]["labels"]) != "map[alertname:TaskFailed severity:critical task:orders]" {
			return fmt.Errorf("alerts %v", got)
		}
		return nil
	})
	feed.Set(healthySnap())
	coordtest.WaitFor(t, 30*time.Second, "the alert ended in alertmanager", func() error {
		got, err := alerts()
		if err != nil || len(got) != 0 {
			return fmt.Errorf("alerts %v, %v", got, err)
		}
		return nil
	})
	waitEvaluations(t, m, 2)
}
