//go:build race

package sim

// raceDetector: under -race a schedule runs about ten times slower; the
// race run covers fewer (scripts/test.sh runs the full count without it).
const raceDetector = true
