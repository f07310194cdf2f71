package instrumentload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shardcount/shardcount/cmd/loadgen/loadtest"
	"github.com/shardcount/shardcount/internal/instruments"
	"github.com/shardcount/shardcount/internal/store/instrumentstore"
)

var (
	exchanges = []string{"EXCHG1", "EXCHG2", "EXCHG3", "EXCHG4"}
	kinds     = []string{"commonstock", "etf", "bond", "fx"}
	money     = []string{"USD", "JPY", "EUR"}
)

func pick(vals []string) string { return vals[rand.IntN(len(vals))] }

// randomInstrument is a price update of the sharded-timestamps example's
// shape, timestamped now.
func randomInstrument() instruments.Instrument {
	return instruments.Instrument{
		Symbol:         fmt.Sprintf("SYM%d", rand.IntN(500)),
		Price:          instruments.Price{Currency: pick(money), Micros: rand.Int64N(1e12)},
		Exchange:       pick(exchanges),
		InstrumentType: pick(kinds),
		Timestamp:      time.Now().UTC().Truncate(time.Microsecond),
	}
}

// InstrumentsMix records single instruments and queries pages through the
// functions, queryShare of the operations being queries.
func InstrumentsMix(ctx context.Context, f *loadtest.Functions, o loadtest.Options, queryShare float64) loadtest.Report {
	stats := loadtest.Run(ctx, o, func(ctx context.Context, worker int) loadtest.Outcome {
		if rand.Float64() < queryShare {
			return f.QueryInstruments(ctx, "exchange", pick(exchanges), 20)
		}
		in := randomInstrument()
		return f.Instrument(ctx, map[string]any{
			"symbol": in.Symbol, "exchange": in.Exchange, "instrumentType": in.InstrumentType,
			"price":     map[string]any{"currency": in.Price.Currency, "micros": in.Price.Micros},
			"timestamp": in.Timestamp.Format(time.RFC3339Nano),
		})
	})
	return loadtest.Report{Scenario: "instruments", Mode: "functions", Concurrency: o.Concurrency, Stats: stats}
}

// QueryLatency stores docs instruments in store (in batches of 500), then
// times reps first-page queries of 20 by exchange.
func QueryLatency(ctx context.Context, store *instrumentstore.Store, shards, docs, reps int) (loadtest.ReadLatency, error) {
	for left := docs; left > 0; left -= instruments.MaxBatch {
		batch := make([]instruments.Instrument, min(left, instruments.MaxBatch))
		for i := range batch {
			batch[i] = randomInstrument()
		}
		if _, err := store.Record(ctx, batch); err != nil {
			return loadtest.ReadLatency{}, err
		}
	}
	l, err := loadtest.Timed(ctx, reps, func(ctx context.Context) error {
		_, _, err := store.Query(ctx, "exchange", pick(exchanges), 20, "")
		return err
	})
	l.Method, l.Shards = "queryInstruments", shards
	return l, err
}
