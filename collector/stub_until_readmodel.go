package collector

// THIS FILE IS A STAND-IN for the readmodel branch's SourceStatus (names
// from /work/wt/notes/cluster-api.md), deleted before that merge.

// SourceStatus is one log source and who collects it.
type SourceStatus struct {
	URI       string `json:"uri"`
	Collector string `json:"collector"`
	Lag       int64  `json:"lag"`
	Lines     int64  `json:"lines"`
}
