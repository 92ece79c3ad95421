package server

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestBrowserEventTargets: the task form defines tasks whose target is a
// NATS JetStream stream or Kafka, as ctl task add does. Choosing a kind
// shows its fields and disables the others' (so the MySQL target's
// required host does not block the form); the stored spec has the kind
// and its fields; the edit form opens with them.
func TestBrowserEventTargets(t *testing.T) {
	ctx, _, s := browserCluster(t, "browser-targets", "alice", auth.Admin, 2*time.Minute)
	hs, _ := browserConsole(t, ctx, s, 500*time.Millisecond)
	b := newBrowser(t, ctx, hs.URL, screenshotDir(t))
	b.login("alice")
	tasks := core.NewAdmin(s, "")

	fill := func(name string) {
		b.run("open the new-task form", chromedp.Navigate(hs.URL+"/new/task"), chromedp.WaitVisible(chromedp.CSS("#task-form")))
		b.run("fill the source",
			chromedp.SetValue(chromedp.CSS("#f-name"), name),
			chromedp.SetValue(chromedp.CSS("#f-source-host"), "127.0.0.1"),
			chromedp.SetValue(chromedp.CSS("#f-source-user"), "repl"),
			chromedp.SetValue(chromedp.CSS("#f-include"), "shop.*"),
		)
	}
	kind := func(k string) {
		browserValue(b, "choose "+k, chromedp.Evaluate[bool](`(() => { const s = document.getElementById("f-target-kind"); s.value = "`+k+`"; s.dispatchEvent(new Event("change")); return true; })()`))
	}
	shown := func(what string) string {
		return browserValue(b, "read which target fields show "+what, chromedp.Evaluate[string](
			`[...document.querySelectorAll("fieldset.kind")].filter((f) => !f.hidden && !f.disabled).map((f) => f.dataset.kind).join(",")`))
	}

	fill("orders-bus")
	if got := shown("by default"); got != "mysql" {
		t.Errorf("target fields shown by default: %q, want mysql", got)
	}
	kind("nats")
	if got := shown("for nats"); got != "nats" {
		t.Errorf("target fields shown for nats: %q", got)
	}
	b.run("fill the stream",
		chromedp.SetValue(chromedp.CSS("#f-nats-url"), "nats://127.0.0.1:4222"),
		chromedp.SetValue(chromedp.CSS("#f-nats-stream"), "orders"),
	)
	b.shot("task-form-nats")
	b.clickTo("create", "#save-task", "/tasks/orders-bus", "#task-state")
	ts, err := tasks.Task(ctx, "orders-bus")
	if err != nil || ts.Spec == nil || ts.Spec.Target.Kind != core.TargetNATS || ts.Spec.Target.URL != "nats://127.0.0.1:4222" || ts.Spec.Target.Stream != "orders" || ts.Spec.Target.Host != "" {
		t.Fatalf("stored nats task: %+v, %v", ts.Spec, err)
	}
	b.run("edit it", chromedp.Navigate(hs.URL+"/tasks/orders-bus/edit"), chromedp.WaitVisible(chromedp.CSS("#task-form")))
	if got := shown("when editing"); got != "nats" {
		t.Errorf("edit form shows %q, want the nats fields", got)
	}
	if url := browserValue(b, "read the URL", chromedp.Evaluate[string](`document.getElementById("f-nats-url").value`)); url != "nats://127.0.0.1:4222" {
		t.Errorf("edit form URL %q", url)
	}

	fill("orders-kafka")
	kind("kafka")
	b.run("fill the brokers",
		chromedp.SetValue(chromedp.CSS("#f-kafka-brokers"), "127.0.0.1:9092\n127.0.0.2:9092"),
		chromedp.SetValue(chromedp.CSS("#f-kafka-format"), "canal"),
	)
	b.clickTo("create", "#save-task", "/tasks/orders-kafka", "#task-state")
	ts, err = tasks.Task(ctx, "orders-kafka")
	if err != nil || ts.Spec == nil || ts.Spec.Target.Kind != core.TargetKafka || strings.Join(ts.Spec.Target.Brokers, ",") != "127.0.0.1:9092,127.0.0.2:9092" || ts.Spec.Target.Format != "canal" {
		t.Fatalf("stored kafka task: %+v, %v", ts.Spec, err)
	}
	b.run("edit it", chromedp.Navigate(hs.URL+"/tasks/orders-kafka/edit"), chromedp.WaitVisible(chromedp.CSS("#task-form")))
	if got := browserValue(b, "read the brokers", chromedp.Evaluate[string](`document.getElementById("f-kafka-brokers").value`)); got != "127.0.0.1:9092\n127.0.0.2:9092" {
		t.Errorf("edit form brokers %q", got)
	}
}
