package proc

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// FlagConfig is the name of the flag naming a command's config file.
const FlagConfig = "config"

// ErrConfig: a config file or a section of one is not what its command
// takes.
var ErrConfig = errors.New("config")

// ConfigFlag is the --config flag of a command that takes Config.
func ConfigFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagConfig, Usage: "YAML file whose keys are this command's flag names; flags given on the command line (or by their SHEPHERD_* variable) win"}
}

// Config is the Before of every command with a --config flag: it reads the
// YAML file and sets, from it, each flag the command line and the
// environment left unset. Files named *.cfg are left to the command
// (`shepherd coord` reads Apache ZooKeeper's zoo.cfg).
func Config(c *cli.Context) error {
	path := c.String(FlagConfig)
	if path == "" || filepath.Ext(path) == ".cfg" {
		return nil
	}
	data, err := ReadInputFile(c, FlagConfig, path, boundedfile.MaxConfig)
	if err != nil {
		return err
	}
	kv, err := ParseConfig(path, data)
	if err != nil {
		return err
	}
	return ApplyConfig(c, path, kv)
}

// ParseConfig decodes a config file's YAML (read from path, for errors)
// into its top-level keys. An empty file has none.
func ParseConfig(path string, data []byte) (map[string]any, error) {
	var kv map[string]any
	if err := yaml.Unmarshal(data, &kv); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	return kv, nil
}

// ApplyConfig sets every flag of c's command named by a key of kv that the
// command line and the environment did not set. source names where kv
// came from (a file, or a file's section) in errors, which also name the
// key: an unknown key, a section where a value belongs, or a value the
// flag refuses.
func ApplyConfig(c *cli.Context, source string, kv map[string]any) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key in the file's order of reading is arbitrary; sorted is stable
	for _, k := range keys {
		f := lookupFlag(c.Command, k)
		if f == nil || k == FlagConfig {
			return fmt.Errorf("%w: %s: unknown key %q (the keys are the flag names of `shepherd %s`: %s)",
				ErrConfig, source, k, c.Command.Name, strings.Join(flagNames(c.Command), ", "))
		}
		if c.IsSet(k) || kv[k] == nil {
			continue
		}
		values, err := flagValues(f, kv[k])
		if err != nil {
			return fmt.Errorf("%w: %s: %s: %v", ErrConfig, source, k, err)
		}
		for _, v := range values {
			if err := c.Set(k, v); err != nil {
				return fmt.Errorf("%w: %s: %s: %v", ErrConfig, source, k, err)
			}
		}
	}
	return nil
}

// flagValues are the strings to Set flag f to, one per element of a list.
func flagValues(f cli.Flag, v any) ([]string, error) {
	list, isList := v.([]any)
	multi := isMulti(f)
	switch {
	case isList && !multi:
		return nil, fmt.Errorf("a list where one value belongs")
	case isList:
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, err := scalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalar(v)
	return []string{s}, err
}

func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(v), nil
	case time.Time:
		return "", fmt.Errorf("a time where a value belongs; quote it")
	}
	return "", fmt.Errorf("a section (%T) where a value belongs", v)
}

func isMulti(f cli.Flag) bool {
	switch f.(type) {
	case *cli.StringSliceFlag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.Float64SliceFlag, *cli.UintSliceFlag, *cli.Uint64SliceFlag:
		return true
	}
	return false
}

func lookupFlag(cmd *cli.Command, name string) cli.Flag {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func flagNames(cmd *cli.Command) []string {
	var out []string
	for _, f := range cmd.Flags {
		if n := f.Names()[0]; n != FlagConfig {
			out = append(out, n)
		}
	}
	return out
}
