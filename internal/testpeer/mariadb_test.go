package testpeer

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMariaDBLifecycle(t *testing.T) {
	m := StartMariaDB(t, MariaDBOptions{ServerID: 42, GTIDStrictMode: true,
		ExtraArgs: []string{"--binlog-row-metadata=FULL"}})
	db := m.DB(t)

	vars := map[string]string{
		"log_bin":             "1",
		"binlog_format":       "ROW",
		"binlog_row_image":    "FULL",
		"binlog_row_metadata": "FULL",
		"server_id":           "42",
		"gtid_strict_mode":    "1",
		"time_zone":           "+00:00",
		"port":                "",
	}
	for name, want := range vars {
		var got string
		if err := db.QueryRow("SELECT @@" + name).Scan(&got); err != nil {
			t.Fatalf("SELECT @@%s: %v", name, err)
		}
		if name == "port" {
			want = strings.TrimPrefix(m.Addr(), "127.0.0.1:")
		}
		if got != want {
			t.Errorf("@@%s = %q, want %q", name, got, want)
		}
	}

	m.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO d.t VALUES (1, 'kept')")

	count := func() int {
		t.Helper()
		var n int
		if err := m.DB(t).QueryRow("SELECT COUNT(*) FROM d.t WHERE v = 'kept'").Scan(&n); err != nil {
			t.Fatalf("count rows: %v", err)
		}
		return n
	}

	t.Run("restart keeps port and data", func(t *testing.T) {
		before := m.PID()
		m.Restart(t)
		if m.PID() == before || processAlive(before) {
			t.Errorf("old pid %d still running or reused after restart (now %d)", before, m.PID())
		}
		if n := count(); n != 1 {
			t.Errorf("after restart: %d kept rows, want 1", n)
		}
	})

	t.Run("kill then start recovers committed data", func(t *testing.T) {
		m.Exec(t, "INSERT INTO d.t VALUES (2, 'kept')")
		pid := m.PID()
		m.Kill()
		if processAlive(pid) {
			t.Fatalf("pid %d alive after Kill", pid)
		}
		if m.PID() != 0 {
			t.Fatalf("PID() = %d after Kill, want 0", m.PID())
		}
		m.Start(t)
		if n := count(); n != 2 {
			t.Errorf("after crash recovery: %d kept rows, want 2", n)
		}
	})

	t.Run("pause freezes, resume continues", func(t *testing.T) {
		if err := m.Pause(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := m.DB(t).QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err == nil {
			t.Errorf("a paused server answered")
		}
		if err := m.Resume(); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 2 {
			t.Errorf("after resume: %d kept rows, want 2", n)
		}
	})

	t.Run("binlog has the rows", func(t *testing.T) {
		var file string
		var pos int64
		var doDB, ignoreDB string
		if err := m.DB(t).QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
			t.Fatalf("SHOW MASTER STATUS: %v", err)
		}
		if !strings.HasPrefix(file, "mysql-bin.") || pos <= 4 {
			t.Errorf("master status %s:%d, want a mysql-bin file past its header", file, pos)
		}
	})
}

func TestMariaDBStatementFormatAndSeparateInstances(t *testing.T) {
	a := StartMariaDB(t, MariaDBOptions{BinlogFormat: "STATEMENT"})
	b := StartMariaDB(t, MariaDBOptions{})
	if a.Addr() == b.Addr() || a.ServerID() == b.ServerID() {
		t.Fatalf("two servers share address or id: %s/%d and %s/%d", a.Addr(), a.ServerID(), b.Addr(), b.ServerID())
	}
	var f string
	if err := a.DB(t).QueryRow("SELECT @@binlog_format").Scan(&f); err != nil || f != "STATEMENT" {
		t.Errorf("binlog_format = %q, %v; want STATEMENT", f, err)
	}
	a.Exec(t, "CREATE DATABASE only_a")
	var n int
	if err := b.DB(t).QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'only_a'").Scan(&n); err != nil || n != 0 {
		t.Errorf("database created on a is visible on b (count %d, err %v)", n, err)
	}
}
