//go:build race

package crashtest

// raceEnabled makes TestMain build the server with the race detector when
// the tests themselves run with it, so load tests double as race tests of
// the server's pipeline.
const raceEnabled = true
