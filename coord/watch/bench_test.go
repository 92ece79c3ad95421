package watch

import (
	"fmt"
	"testing"
)

// BenchmarkTriggerFanOut measures one event told to n sessions watching the
// same path: the herd a popular znode produces.
func BenchmarkTriggerFanOut(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("persistent/sessions=%d", n), func(b *testing.B) {
			m := New()
			for s := range int64(n) {
				m.Add(s, "/app/config", Persistent)
			}
			for b.Loop() {
				if got := m.Trigger(changed, "/app/config"); len(got) != n {
					b.Fatalf("told %d sessions, want %d", len(got), n)
				}
			}
		})
		b.Run(fmt.Sprintf("oneshot/sessions=%d", n), func(b *testing.B) {
			m := New()
			for b.Loop() {
				b.StopTimer()
				for s := range int64(n) {
					m.Add(s, "/app/config", Data)
				}
				b.StartTimer()
				if got := m.Trigger(changed, "/app/config"); len(got) != n {
					b.Fatalf("told %d sessions, want %d", len(got), n)
				}
			}
		})
		b.Run(fmt.Sprintf("rearm+oneshot/sessions=%d", n), func(b *testing.B) {
			// The full cycle of a one-shot watch: every client re-arms
			// with getData(watch) after each notification.
			m := New()
			for b.Loop() {
				for s := range int64(n) {
					m.Add(s, "/app/config", Data)
				}
				if got := m.Trigger(changed, "/app/config"); len(got) != n {
					b.Fatalf("told %d sessions, want %d", len(got), n)
				}
			}
		})
	}
}

// BenchmarkTriggerMiss measures the common write: a path nobody watches, in
// a registry holding 100,000 watches, with and without recursive watches
// elsewhere (which switch on the ancestor walk).
func BenchmarkTriggerMiss(b *testing.B) {
	for _, rec := range []bool{false, true} {
		b.Run(fmt.Sprintf("recursive=%v", rec), func(b *testing.B) {
			m := populated(1000, 100)
			if rec {
				m.Add(1, "/elsewhere", PersistentRecursive)
			}
			for b.Loop() {
				if got := m.Trigger(changed, "/a/b/c/d/e/f/g/h"); len(got) != 0 {
					b.Fatalf("told %v, want nobody", got)
				}
			}
		})
	}
}

// BenchmarkTriggerRecursive measures an event eight levels deep under
// PersistentRecursive watches on the root, every ancestor and the path.
func BenchmarkTriggerRecursive(b *testing.B) {
	m := populated(1000, 100)
	m.Add(0, "/", PersistentRecursive)
	path := ""
	for i := range 8 {
		path += fmt.Sprintf("/l%d", i)
		m.Add(int64(i+1), path, PersistentRecursive)
	}
	for b.Loop() {
		if got := m.Trigger(changed, path); len(got) != 9 {
			b.Fatalf("told %d sessions, want 9", len(got))
		}
	}
}

// BenchmarkRemoveSession measures closing a session holding 100 watches in
// a registry of 100,000: the cost must follow the session, not the registry.
func BenchmarkRemoveSession(b *testing.B) {
	for _, total := range []int{100, 1000} {
		b.Run(fmt.Sprintf("registry=%d00watches", total), func(b *testing.B) {
			m := populated(total, 100)
			const gone = -1
			for b.Loop() {
				b.StopTimer()
				for i := range 100 {
					m.Add(gone, fmt.Sprintf("/s%d/n%d", i, i), Data)
				}
				b.StartTimer()
				m.RemoveSession(gone)
			}
		})
	}
}

// populated returns a registry where each of sessions sessions holds
// perSession Data watches on its own paths.
func populated(sessions, perSession int) *Manager {
	m := New()
	for s := range sessions {
		for i := range perSession {
			m.Add(int64(s), fmt.Sprintf("/s%d/n%d", s, i), Data)
		}
	}
	return m
}
