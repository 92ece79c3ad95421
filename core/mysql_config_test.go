package core

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/replication"
)

func TestReplicationConfig(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := testSpec("t1")
	sp.Source.Password = "inline"
	sp.Target.PasswordFile = pw
	sp.Filter = Filter{Include: []string{"shop.*"}, Exclude: []string{"shop.tmp_*"}}
	sp.Routes = []Route{{From: "shop", To: "shop2"}, {From: "shop.items", To: "shop2.hot_items"}}
	sp.Apply = Apply{BatchRows: 10, MaxTxnRows: 20}
	sp.ServerID, sp.CheckpointSchema = 77, "ckpt"
	cfg, err := replicationConfig(t.Context(), sp, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Task != "t1" || cfg.Source.Password != "inline" || cfg.Target.Password != "from-file" || cfg.Source.Port != 3306 ||
		cfg.ServerID != 77 || cfg.CheckpointSchema != "ckpt" || cfg.BatchRows != 10 || cfg.MaxTxnRows != 20 ||
		!reflect.DeepEqual(cfg.Include, sp.Filter.Include) || !reflect.DeepEqual(cfg.Exclude, sp.Filter.Exclude) {
		t.Errorf("config %+v", cfg)
	}
	want := []replication.Route{{FromDB: "shop", ToDB: "shop2"}, {FromDB: "shop", FromTable: "items", ToDB: "shop2", ToTable: "hot_items"}}
	if !reflect.DeepEqual(cfg.Routes, want) {
		t.Errorf("routes %+v, want %+v", cfg.Routes, want)
	}
	sp.Target.PasswordFile = pw + ".missing"
	if _, err := (MySQL{}).Open(coordtest.Context(t, 5*time.Second), sp, slog.Default()); !errors.Is(err, ErrNonRetryable) || !strings.Contains(err.Error(), "target.passwordFile") {
		t.Errorf("Open with a missing password file: %v; want a non-retryable error naming target.passwordFile", err)
	}
}

func TestMapReplicationError(t *testing.T) {
	for _, tc := range []struct {
		in          error
		fenced, bad bool
	}{
		{replication.ErrFenced, true, false},
		{fmt.Errorf("task %q: %w: no binlog position x.1:4", "t", replication.ErrNotOnSource), false, true},
		{replication.ErrSourceConfig, false, true},
		{replication.ErrConfig, false, true},
		{&replication.ApplyError{Statement: "x", Err: errors.New("refused")}, false, false},
		{errors.New("connection refused"), false, false},
	} {
		err := mapReplicationError(tc.in)
		if errors.Is(err, ErrFenced) != tc.fenced || errors.Is(err, ErrNonRetryable) != tc.bad || !errors.Is(err, tc.in) || err.Error() != tc.in.Error() {
			t.Errorf("mapReplicationError(%v) = %v: fenced %v, non-retryable %v; want %v, %v, same message and chain",
				tc.in, err, errors.Is(err, ErrFenced), errors.Is(err, ErrNonRetryable), tc.fenced, tc.bad)
		}
	}
	if err := mapReplicationError(replication.ErrNotOnSource); !errors.Is(err, ErrPositionNotOnSource) {
		t.Errorf("mapReplicationError(ErrNotOnSource) = %v, want ErrPositionNotOnSource", err)
	}
	if mapReplicationError(nil) != nil {
		t.Error("mapReplicationError(nil) is not nil")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	eng := NewMemEngine(0)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no work", Config{Host: "h", Engine: eng}, "no work"},
		{"bad host", Config{Host: "a/b", Tasks: []string{"t"}, Engine: eng}, "host:"},
		{"bad task", Config{Host: "h", Tasks: []string{"t", ""}, Engine: eng}, "task 2: required"},
		{"duplicate task", Config{Host: "h", Tasks: []string{"t", "t"}, Engine: eng}, `task "t" given twice`},
		{"bad group", Config{Host: "h", Group: "g 1", Engine: eng}, "group:"},
		{"no engine", Config{Host: "h", Tasks: []string{"t"}}, "no replication engine"},
		{"negative", Config{Host: "h", Tasks: []string{"t"}, Engine: eng, ScanInterval: -time.Second}, "scan-interval -1s"},
		{"negative capacity", Config{Host: "h", Group: "g", Engine: eng, Capacity: -1}, "capacity -1"},
		{"bad balance-moves", Config{Host: "h", Group: "g", Engine: eng, BalanceMoves: -2}, "balance-moves -2"},
		{"negative grace", Config{Host: "h", Group: "g", Engine: eng, BalanceGrace: -time.Second}, "balance-grace -1s"},
	} {
		_, err := New(nil, tc.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want ErrBadConfig mentioning %q", tc.name, err, tc.want)
		}
	}
}
