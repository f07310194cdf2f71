// Package sim is a deterministic simulation of the whole counters service,
// in its tests: one to three instances of the real service (handlers,
// edge, core, group commit, stores, roll-up and reconcile) in a
// testing/synctest bubble, on one model of Firestore (internal/fsmodel,
// held to the emulator by its differential test), with calls that apply
// at any time up to their deadline and fail before or after they apply,
// events delivered at least once and in any order, clients that retry,
// give up, reuse keys and pour into hot counters, and users who react to
// a post from two devices at once.
//
// One seed replays one schedule exactly:
//
//	go test ./internal/sim -run TestSimulation -seed 1234 -v
//
// docs/design/simulation.md says what runs for real, what the environment
// does, and which invariant checks which promise.
package sim
