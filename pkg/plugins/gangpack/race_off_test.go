//go:build !race

package gangpack

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
