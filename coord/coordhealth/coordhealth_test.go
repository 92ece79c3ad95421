package coordhealth

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// The testdata answers are real: captured from `shepherd coord` and from
// Apache ZooKeeper 3.8 (Debian's package), both standalone with 5 nodes.
func readAnswer(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSrvrReadsBothServersAnswers(t *testing.T) {
	for _, tc := range []struct {
		file, version string
		lat           LatencyStats
	}{
		{"srvr-shepherd.txt", "3.8.0-shepherd", LatencyStats{}},
		{"srvr-zookeeper.txt", "3.8.0-${mvngit.commit.id}", LatencyStats{}},
	} {
		s, err := ParseSrvr(readAnswer(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if s.Mode != "standalone" || s.Version != tc.version || s.Znodes != 5 || s.Connections != 1 || s.Outstanding != 0 || s.Latency != tc.lat {
			t.Errorf("%s: got %+v", tc.file, s)
		}
		if s.Raw["Zxid"] != "0x0" {
			t.Errorf("%s: Raw lacks Zxid: %v", tc.file, s.Raw)
		}
	}
}

func TestParseSrvrReadsLatencyAndRefusesMalformedAnswers(t *testing.T) {
	s, err := ParseSrvr("Zookeeper version: 3.9.1, built on x\nLatency min/avg/max: 1/2.5/40\nMode: leader\nNode count: 12\nOutstanding: 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.Latency != (LatencyStats{1, 2.5, 40}) || s.Mode != "leader" || s.Version != "3.9.1" || s.Znodes != 12 || s.Outstanding != 3 {
		t.Errorf("got %+v", s)
	}
	for _, bad := range []string{
		"",
		"imok",
		"Mode: standalone\nLatency min/avg/max: 1/2\n",
		"Mode: standalone\nNode count: many\n",
	} {
		if _, err := ParseSrvr(bad); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("ParseSrvr(%q) = %v, want ErrBadAnswer", bad, err)
		}
	}
}

func TestParseMntrReadsBothServersAnswers(t *testing.T) {
	for _, f := range []string{"mntr-shepherd.txt", "mntr-zookeeper.txt"} {
		m, err := ParseMntr(readAnswer(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m["zk_server_state"] != "standalone" || m["zk_znode_count"] != "5" || m["zk_watch_count"] != "0" {
			t.Errorf("%s: got %v", f, m)
		}
	}
	if _, err := ParseMntr("Mode: standalone\n"); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("ParseMntr of a srvr answer = %v, want ErrBadAnswer", err)
	}
}

func TestFieldsSplitsEachWordsLines(t *testing.T) {
	if got := Fields("conf", "clientPort=2181\ndataDir=/var/lib/zk\n"); got["clientPort"] != "2181" || got["dataDir"] != "/var/lib/zk" {
		t.Errorf("conf: %v", got)
	}
	if got := Fields("ruok", "imok"); got != nil {
		t.Errorf("ruok: %v, want nil", got)
	}
}

// serve answers every connection as a server would: answer gets the
// word read and writes the reply. It stops when the test ends.
func serve(t *testing.T, answer func(word string, w io.Writer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var word [4]byte
				if _, err := io.ReadFull(c, word[:]); err == nil {
					answer(string(word[:]), c)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// serveWords answers each word from answers.
func serveWords(t *testing.T, answers map[string]string) string {
	return serve(t, func(word string, w io.Writer) { io.WriteString(w, answers[word]) })
}

// A server that allows srvr alone (the default of both servers): Probe
// is OK with srvr's fields and without mntr's.
func TestProbeOfAServerAllowingSrvrAloneIsOK(t *testing.T) {
	addr := serveWords(t, map[string]string{
		"srvr": readAnswer(t, "srvr-zookeeper.txt"),
		"mntr": "mntr is not executed because it is not in the whitelist.\n",
	})
	s := Probe(context.Background(), addr)
	if !s.OK || s.Mode != "standalone" || s.Znodes != 5 || s.Error != "" {
		t.Fatalf("Probe = %+v", s)
	}
	if _, ok := s.Raw["zk_version"]; ok {
		t.Fatalf("Probe took mntr keys from a refusal: %v", s.Raw)
	}
}

// With mntr allowed, Probe adds its keys and the watch count.
func TestProbeReadsMntrWhenAllowed(t *testing.T) {
	mntr := strings.Replace(readAnswer(t, "mntr-shepherd.txt"), "zk_watch_count\t0", "zk_watch_count\t42", 1)
	addr := serveWords(t, map[string]string{"srvr": readAnswer(t, "srvr-shepherd.txt"), "mntr": mntr})
	s := Probe(context.Background(), addr)
	if !s.OK || s.Watches != 42 || s.Raw["zk_server_state"] != "standalone" || s.Raw["Mode"] != "standalone" {
		t.Fatalf("Probe = %+v", s)
	}
}

func TestAskReportsAWordTheServerDisallows(t *testing.T) {
	addr := serveWords(t, map[string]string{"mntr": "mntr is not executed because it is not in the whitelist.\n"})
	_, err := Ask(context.Background(), addr, "mntr")
	if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "4lw.commands.whitelist") {
		t.Fatalf("Ask = %v, want ErrNotAllowed with the remedy", err)
	}
}

// An attacker's or a broken server's endless answer is cut at MaxAnswer
// instead of filling memory.
func TestAskBoundsAnEndlessAnswer(t *testing.T) {
	addr := serve(t, func(_ string, w io.Writer) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	got, err := Ask(context.Background(), addr, "dump")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxAnswer {
		t.Fatalf("answer of %d bytes, want it cut at %d", len(got), MaxAnswer)
	}
}

// A server that accepts and never answers holds Ask only until the
// context's deadline.
func TestAskGivesUpAtTheDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	addr := serve(t, func(string, io.Writer) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Ask(ctx, addr, "srvr"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask = %v, want DeadlineExceeded", err)
	}
}

func TestAskRefusesAWordOfAnotherLength(t *testing.T) {
	for _, w := range []string{"", "ruo", "ruokk"} {
		if _, err := Ask(context.Background(), "127.0.0.1:1", w); err == nil || !strings.Contains(err.Error(), "not a four-letter word") {
			t.Errorf("Ask(%q) = %v, want a length error", w, err)
		}
	}
}

func TestProbeOfAClosedPortIsNotOKAndSaysWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := Probe(context.Background(), addr)
	if s.OK || s.Addr != addr || !strings.Contains(s.Error, addr) {
		t.Fatalf("Probe = %+v, want !OK naming %s", s, addr)
	}
}

func TestServersSplitsAConnectString(t *testing.T) {
	for in, want := range map[string]string{
		"h:1":            "h:1",
		"h:1,g:2/chroot": "h:1 g:2",
		"[::1]:2181/a":   "[::1]:2181",
		"h":              "",
		"h:1,,g:2":       "",
		"/chroot":        "",
	} {
		got, err := Servers(in)
		if strings.Join(got, " ") != want || (want == "") != (err != nil) {
			t.Errorf("Servers(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
