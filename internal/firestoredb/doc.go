// Package firestoredb is the project's only access to Firestore: opening
// clients for production or the emulator, one-round-trip commits that are
// never retried blindly, reads and queries at a read time, SUM and COUNT
// aggregations with their read time, and the writes the stores build; a
// lost race is told apart (Raced) for internal/retry's loop. It knows
// nothing of counters: the stores under internal/store do.
//
// Every store talks to Firestore through one narrow interface, Firestore
// (api.go), so the same code runs on the model the simulation uses
// (internal/fsmodel).
//
// Every error it returns is classified (Classify, internal/errs): a
// failure a retry can fix is UNAVAILABLE with a Retry-After, NOT_FOUND and
// ALREADY_EXISTS mean what they say, anything else is internal. Callers
// look at gRPC codes only to tell a lost race (Code).
//
// Every commit, document read and aggregation is counted where it happens,
// under the label of its context (ledger.WithLabel), so costs are measured, not
// computed (Stats).
package firestoredb
