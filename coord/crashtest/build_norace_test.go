//go:build !race

package crashtest

// raceEnabled is false: the server is built without the race detector.
const raceEnabled = false
