//go:build race

package httpapi

// raceSlowdown scales time budgets: the race detector slows decoding
// about tenfold.
const raceSlowdown = 10
