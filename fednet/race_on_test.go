//go:build race

package fednet

// raceEnabled reports whether the tests run under the race detector,
// which slows them several times: timing tests widen their deadlines.
const raceEnabled = true
