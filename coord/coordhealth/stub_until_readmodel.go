// Package coordhealth: THIS FILE IS A STAND-IN for the readmodel branch's
// package (names from /work/wt/notes/cluster-api.md), deleted before that
// merge.
package coordhealth

// LatencyStats are srvr's min/avg/max latencies in ms.
type LatencyStats struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
}

// Server is one coordination server's health.
type Server struct {
	Addr        string            `json:"addr"`
	OK          bool              `json:"ok"`
	Error       string            `json:"error,omitempty"`
	Mode        string            `json:"mode,omitempty"`
	Version     string            `json:"version,omitempty"`
	Latency     LatencyStats      `json:"latency"`
	Outstanding int64             `json:"outstanding"`
	Znodes      int64             `json:"znodes"`
	Watches     int64             `json:"watches,omitempty"`
	Connections int64             `json:"connections"`
	Raw         map[string]string `json:"raw,omitempty"`
}
