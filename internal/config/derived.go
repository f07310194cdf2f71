package config

import "time"

// Durations derived from the settings, each declared once.

// RollupWork bounds one roll-up event's work: a slot's holder sleeps up
// to a cadence, then makes a few Firestore calls.
func (c Config) RollupWork() time.Duration { return 3*c.RollupCadence + 2*c.FirestoreDeadline }

// RollupTimeout is rollupCounter's deployed timeout: its work, and a
// margin to answer.
func (c Config) RollupTimeout() time.Duration { return c.RollupWork() + 30*time.Second }

// ActivityEvery is how often an instance marks a counter it writes in the
// activity index (docs/design/rollup.md): ten cadences, so a counter hot
// on many instances takes few writes a second on its one marker.
func (c Config) ActivityEvery() time.Duration { return 10 * c.RollupCadence }

// ReconcileSettle is how long after its marker the scheduled reconcile
// visits a counter: longer than an instance marks it after a write
// (ActivityEvery), plus clock skew and a commit's time, so every write is
// in the sum the visit reads, and the roll-up has had its turn.
func (c Config) ReconcileSettle() time.Duration {
	return 2*c.ActivityEvery() + c.FirestoreDeadline + time.Second
}

// ReconcileWork bounds one reconcileCounters run: its budget, then saving
// its cursor.
func (c Config) ReconcileWork() time.Duration { return c.ReconcileBudget + c.FirestoreDeadline }

// ReconcileTimeout is reconcileCounters' deployed timeout and its Cloud
// Scheduler job's attempt deadline, so neither cuts a run short.
func (c Config) ReconcileTimeout() time.Duration {
	return c.ReconcileBudget + 2*c.FirestoreDeadline + 30*time.Second
}
