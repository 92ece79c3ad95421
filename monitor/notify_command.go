package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// CommandConfig is a command channel: the program is run once per batch
// with the webhook's JSON document on standard input.
type CommandConfig struct {
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
}

type command struct{ c CommandConfig }

func newCommand(c CommandConfig) (Notifier, error) {
	if c.Command == "" {
		return nil, fmt.Errorf("monitor: command channel: command is required")
	}
	return &command{c: c}, nil
}

func (c *command) Name() string { return "command " + c.c.Command }

// maxCommandOutput bounds what is kept of a failing command's output.
const maxCommandOutput = 4 << 10

func (c *command) Send(ctx context.Context, b Batch) error {
	data, err := json.Marshal(struct {
		Version int `json:"version"`
		Batch
	}{WebhookVersion, b})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.c.Command, c.c.Args...)
	cmd.Stdin = bytes.NewReader(data)
	out := &limitedBuffer{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, killed whole when the timeout passes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Env = append(cmd.Environ(), "SHEPHERD_ALERT_SUBJECT="+b.subject())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.Len(); room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
