package ctl

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
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

// fourLetter sends word to the first server of --zk and prints the answer.
func (r *runner) fourLetter(word string) error {
	servers, err := coordhealth.Servers(r.connect)
	if err != nil {
		return fmt.Errorf("--zk %q: want host:port[,host:port…][/chroot]", r.connect)
	}
	addr := servers[0]
	ctx, cancel := r.opCtx()
	defer cancel()
	answer, err := coordhealth.Ask(ctx, addr, word)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "coordhealth: "))
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

// fourLetterValues is coordhealth.Fields with numbers as numbers.
func fourLetterValues(word, answer string) map[string]any {
	fields := coordhealth.Fields(word, answer)
	if fields == nil {
		return nil
	}
	values := make(map[string]any, len(fields))
	for k, v := range fields {
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
