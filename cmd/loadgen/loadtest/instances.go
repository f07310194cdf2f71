package loadtest

import "context"

// InstancesReport compares one function instance with two: group commit,
// slot claims and budgets are per instance, so two instances share fewer
// commits and claim more slots.
type InstancesReport struct {
	// HotOne and HotTwo: one hot counter (10 shards, concurrency 64)
	// through one server, then through two (each request to one of them).
	HotOne, HotTwo Report
	// RollupOne and RollupTwo: the lag run (1,000 increments/s) with its
	// events delivered to one roll-up instance, then spread over two.
	RollupOne, RollupTwo *LagReport
}

// Instances measures the hot counter through one and two servers.
func Instances(ctx context.Context, one, two *Functions, o Options) (Report, Report, error) {
	spec := IncrementSpec{Name: "hot", Counters: 1, Shards: 10}
	a, err := Increments(ctx, one, "functions, one instance", o, spec)
	if err != nil {
		return a, Report{}, err
	}
	b, err := Increments(ctx, two, "functions, two instances", o, spec)
	return a, b, err
}
