package windows

import (
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/rfc3339"
)

// History is what a read asks of a counter's buckets: those of G at
// Starts, or, with Union, a distinct counter's window of days
// (LastDays), its members over all of them.
type History struct {
	G      Granularity
	Starts []time.Time
	Union  string
}

// HistoryOf checks a read's history (a granularity, and from and to, by
// default its DefaultSpan to now) or window (a distinct counter's), each
// named by its request field: nil when none is asked.
func (cal Calendar) HistoryOf(history, from, to, window *string, now time.Time) (*History, error) {
	if window != nil {
		if history != nil || from != nil || to != nil {
			return nil, errs.Invalid("window", "goes without history, from and to")
		}
		starts, err := cal.LastDays("window", *window, now)
		return &History{G: Day, Starts: starts, Union: *window}, err
	}
	if history == nil {
		if from != nil || to != nil {
			return nil, errs.Invalid("from", "and to go with history")
		}
		return nil, nil
	}
	g, err := Parse("history", *history)
	if err != nil {
		return nil, err
	}
	end := now
	if to != nil {
		if end, err = rfc3339.Parse("to", *to); err != nil {
			return nil, err
		}
	}
	start := cal.Step(g, cal.Start(g, end), 1-DefaultSpan(g))
	if from != nil {
		if start, err = rfc3339.Parse("from", *from); err != nil {
			return nil, err
		}
	}
	starts, err := cal.Range(g, start, end)
	if err != nil {
		return nil, err
	}
	return &History{G: g, Starts: starts}, nil
}
