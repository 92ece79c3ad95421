// Package duration is the time.Duration of documents people write: task
// specs and job specs give durations as Go writes them ("90s", "1h30m")
// in YAML and JSON.
package duration

import (
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as Go writes durations ("90s",
// "1h30m") in YAML and JSON.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration: want a string such as \"90s\", got %s", b)
		}
		*d = Duration(n)
		return nil
	}
	return d.parse(s)
}

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration: want a string such as \"90s\"", n.Line)
	}
	if err := d.parse(s); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// MarshalYAML writes d as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit such as 90s or 1h30m", s)
	}
	*d = Duration(v)
	return nil
}
