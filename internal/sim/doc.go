// Package sim is a deterministic simulation of the whole counters service,
// in its tests: several function instances, each with its own store
// (internal/firestoredb, its caches), its group commit and its roll-up,
// on one model of Firestore (internal/fsmodel, held to the emulator by
// its differential test), with a virtual clock, trigger events that are
// duplicated, reordered, delayed and lost, Firestore calls that fail
// before or after they apply, time out or are cut short, and the lifecycle
// of counters: creation over tombstones, increments with and without keys,
// likes, batches, reshards, resets, deletions, reconcile and strong reads.
//
// A scheduler (internal/simsched) lets one goroutine run at a time: every
// Firestore call and every sleep hands control back to it, and it picks
// what happens next from a seeded source, so a seed replays exactly the
// same schedule:
//
//	go test ./internal/sim -run TestSimulation -seed 1234 -v
//
// The invariants (docs/design/simulation.md) are checked after every
// commit and at quiescence.
package sim
