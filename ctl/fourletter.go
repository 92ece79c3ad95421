package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// fourLetterWords are ZooKeeper's four-letter words that have a verb of
// their own; each is sent to the first server of --zk. stat and dump are
// znode verbs here; "4lw stat" sends them.
var fourLetterWords = []struct{ word, usage string }{
	{"ruok", "ask whether the server runs (answer: imok)"},
	{"srvr", "print the server's version, mode, latency and counts"},
	{"mntr", "print the server's metrics, one key and value per line"},
	{"conf", "print the server's configuration"},
	{"cons", "list the server's connections"},
	{"envi", "print the server's environment"},
	{"isro", "ask whether the server is read-only (answer: ro or rw)"},
	{"wchs", "summarise the server's watches"},
	{"wchc", "list the server's watches by session"},
	{"wchp", "list the server's watches by path"},
	{"dirs", "print the size of the server's snapshots and logs"},
	{"crst", "reset the server's connection statistics"},
	{"srst", "reset the server's statistics"},
}

func (r *runner) fourLetterCommands() []*cli.Command {
	var cmds []*cli.Command
	for _, w := range fourLetterWords {
		word := w.word
		cmds = append(cmds, &cli.Command{
			Name:     word,
			Usage:    w.usage,
			Category: "four-letter words (to the first server of --zk)",
			Action: func(c *cli.Context) error {
				if _, err := argsN(c, 0, 0); err != nil {
					return err
				}
				return r.fourLetter(word)
			},
		})
	}
	return append(cmds, &cli.Command{
		Name:      "4lw",
		Usage:     "send any four-letter word (stat, dump …)",
		ArgsUsage: "word",
		Category:  "four-letter words (to the first server of --zk)",
		Action: func(c *cli.Context) error {
			args, err := argsN(c, 1, 1)
			if err != nil {
				return err
			}
			if len(args[0]) != 4 {
				return usagef("4lw: %q is not a four-letter word (srvr, mntr, stat, dump …)", args[0])
			}
			return r.fourLetter(args[0])
		},
	})
}

// notAllowed ends the answer of a server that has the word disabled.
const notAllowed = "is not executed because it is not in the whitelist."

// fourLetter sends word to the first server of --zk and prints the answer.
func (r *runner) fourLetter(word string) error {
	addr, err := firstServer(r.connect)
	if err != nil {
		return err
	}
	answer, err := r.askFourLetter(addr, word)
	if err != nil {
		return err
	}
	if strings.Contains(answer, notAllowed) {
		return fmt.Errorf("%s: %s (enable it with 4lw.commands.whitelist in zoo.cfg, or --4lw on shepherd coord)", addr, strings.TrimSpace(answer))
	}
	if r.json {
		return writeJSON(r.env.Stdout, fourLetterResult{Server: addr, Word: word, Answer: answer, Values: fourLetterValues(word, answer)})
	}
	io.WriteString(r.env.Stdout, answer)
	if !strings.HasSuffix(answer, "\n") {
		io.WriteString(r.env.Stdout, "\n")
	}
	return nil
}

// fourLetterResult is a four-letter word's --json output. Values holds
// the answer's key/value lines for the words that have them (mntr, srvr,
// stat, conf, envi), numbers as numbers.
type fourLetterResult struct {
	Server string         `json:"server"`
	Word   string         `json:"word"`
	Answer string         `json:"answer"`
	Values map[string]any `json:"values,omitempty"`
}

// fourLetterValues parses the key/value lines of an answer: mntr's
// "key<TAB>value", srvr's "Key: value", conf's and envi's "key=value".
func fourLetterValues(word, answer string) map[string]any {
	var sep string
	switch word {
	case "mntr":
		sep = "\t"
	case "srvr", "stat":
		sep = ": "
	case "conf", "envi":
		sep = "="
	default:
		return nil
	}
	values := map[string]any{}
	for _, line := range strings.Split(answer, "\n") {
		k, v, ok := strings.Cut(line, sep)
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			values[k] = n
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			values[k] = f
		} else {
			values[k] = v
		}
	}
	return values
}

// askFourLetter sends word to addr and returns the whole answer: the
// server closes the connection after it.
func (r *runner) askFourLetter(addr, word string) (string, error) {
	ctx, cancel := r.opCtx()
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return "", err
		}
		return "", fmt.Errorf("%s to %s: %w: is a ZooKeeper or shepherd coord server listening there? (set --zk)", word, addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := io.WriteString(c, word); err != nil {
		return "", fmt.Errorf("%s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if errors.Is(err, context.Canceled) {
			return "", err
		}
		return "", fmt.Errorf("%s to %s: reading the answer: %w", word, addr, err)
	}
	return string(b), nil
}

// firstServer returns the first host:port of a connect string.
func firstServer(connect string) (string, error) {
	hosts, _, _ := strings.Cut(connect, "/")
	first, _, _ := strings.Cut(hosts, ",")
	if _, _, err := net.SplitHostPort(first); err != nil || first == "" {
		return "", fmt.Errorf("--zk %q: want host:port[,host:port…][/chroot]", connect)
	}
	return first, nil
}
