package loadtest

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Suite is everything the benchmark suite measured in one run.
type Suite struct {
	Command    string        `json:"command"`
	Machine    string        `json:"machine"`
	RunSeconds float64       `json:"run_seconds"`
	Rounds     int           `json:"rounds"`
	Increments []Report      `json:"increments"`
	Reads      []ReadLatency `json:"reads"`
	Lag        *LagReport    `json:"rollup_lag,omitempty"`
	Queries    []ReadLatency `json:"instrument_queries"`
}

// find returns the increments report of a mode, shard count and concurrency.
func (s *Suite) find(mode string, shards, c int) *Report {
	for i, r := range s.Increments {
		if r.Mode == mode && r.Shards == shards && r.Concurrency == c {
			return &s.Increments[i]
		}
	}
	return nil
}

func (s *Suite) axes() (shards, conc []int) {
	for _, r := range s.Increments {
		if !slices.Contains(shards, r.Shards) {
			shards = append(shards, r.Shards)
		}
		if !slices.Contains(conc, r.Concurrency) {
			conc = append(conc, r.Concurrency)
		}
	}
	slices.Sort(shards)
	slices.Sort(conc)
	return shards, conc
}

// Markdown writes the tables of bench/README.md.
func (s *Suite) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Produced by `%s` on %s.\n\n", s.Command, s.Machine)

	fmt.Fprintf(w, "**Increments** (one hot counter, +1 each; functions and raw alternate, %d runs of %.0f s each, the median kept; "+
		"exact = every run's strong read equalled the acknowledged increments):\n", s.Rounds, s.RunSeconds)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shards | concurrency | functions inc/s | functions p99 | raw inc/s | raw p99 | functions / raw | exact |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---|")
	shards, conc := s.axes()
	for _, n := range shards {
		for _, c := range conc {
			f, r := s.find("functions", n, c), s.find("raw", n, c)
			if f == nil || r == nil {
				continue
			}
			fmt.Fprintf(w, "| %d | %d | %.0f | %.1f ms | %.0f | %.1f ms | %.0f%% | %s |\n",
				n, c, f.Throughput, f.P99, r.Throughput, r.P99, 100*f.Throughput/r.Throughput, exact(f, r))
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "**Strong reads** (every shard holds a value; billed reads per Firestore pricing):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shards | method | p50 | p99 | billed reads | speed-up vs stream |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|")
	for _, rl := range s.Reads {
		stream := 0.0
		for _, o := range s.Reads {
			if o.Shards == rl.Shards && strings.HasPrefix(o.Method, "stream") {
				stream = o.P50MS
			}
		}
		speed := "–"
		if stream > 0 && rl.P50MS > 0 && !strings.HasPrefix(rl.Method, "stream") {
			speed = fmt.Sprintf("%.1f×", stream/rl.P50MS)
		}
		fmt.Fprintf(w, "| %d | %s | %.1f ms | %.1f ms | %d | %s |\n", rl.Shards, rl.Method, rl.P50MS, rl.P99MS, rl.BilledReads, speed)
	}

	if l := s.Lag; l != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "**Roll-up lag under load** (%d shards, concurrency %d, target %s): %.0f increments/s for %.0f s; "+
			"age of the roll-up a reader sees, sampled every 100 ms: p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d samples); "+
			"caught up %s after the last increment; exact: %v.\n",
			l.Shards, l.Concurrency, rateText(l), l.Throughput, l.Seconds, l.LagP50MS, l.LagP99MS, l.LagMaxMS, l.Samples,
			lagText(l.Check), l.Check != nil && l.Check.Exact)
	}

	if len(s.Queries) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**Instruments queries** (first page of 20 by exchange, 2,000 documents):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| shard values | queries per page | p50 | p99 |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|")
		for _, q := range s.Queries {
			fmt.Fprintf(w, "| %d | %d | %.1f ms | %.1f ms |\n", q.Shards, (q.Shards+29)/30, q.P50MS, q.P99MS)
		}
	}
}

func exact(rs ...*Report) string {
	for _, r := range rs {
		if r.Check == nil || !r.Check.Exact {
			return "**no**"
		}
	}
	return "yes"
}

func lagText(c *Check) string {
	if c == nil || c.RollupLagMS == nil {
		return "n/a"
	}
	if *c.RollupLagMS < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", *c.RollupLagMS)
}

func rateText(l *LagReport) string {
	if l.TargetRate == 0 {
		return "as fast as possible"
	}
	return fmt.Sprintf("%.0f/s", l.TargetRate)
}

// SVG writes a grouped bar chart of increments per second by shard count,
// one bar per mode and concurrency.
func (s *Suite) SVG(w io.Writer) {
	shards, conc := s.axes()
	type series struct {
		mode  string
		c     int
		color string
	}
	var all []series
	palette := map[string][]string{"functions": {"#1a73e8", "#0b3d91"}, "raw": {"#f9ab00", "#b06000"}}
	for i, c := range conc {
		for _, m := range []string{"functions", "raw"} {
			all = append(all, series{m, c, palette[m][i%2]})
		}
	}
	top := 0.0
	for _, r := range s.Increments {
		top = max(top, r.Throughput)
	}
	top = niceCeil(top)
	const (
		width, height       = 720, 380
		left, right, bottom = 80, 20, 60
		topPad              = 40
	)
	plotW, plotH := float64(width-left-right), float64(height-topPad-bottom)
	groupW := plotW / float64(max(len(shards), 1))
	barW := groupW * 0.8 / float64(max(len(all), 1))

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="15" font-weight="bold">Increments per second by shard count (Firestore emulator)</text>`+"\n", left)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(topPad) + plotH - plotH*float64(i)/4
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, width-right, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-6, y+4, v)
	}
	for gi, n := range shards {
		gx := float64(left) + groupW*float64(gi) + groupW*0.1
		for si, se := range all {
			r := s.find(se.mode, n, se.c)
			if r == nil {
				continue
			}
			h := plotH * r.Throughput / top
			x := gx + barW*float64(si)
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s c=%d: %.0f/s</title></rect>`+"\n",
				x, float64(topPad)+plotH-h, barW-2, h, se.color, se.mode, se.c, r.Throughput)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d shard%s</text>`+"\n",
			gx+groupW*0.4, height-bottom+18, n, plural(n))
	}
	for si, se := range all {
		x := left + si*155
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s, c=%d</text>`+"\n",
			x, height-22, se.color, x+16, height-12, se.mode, se.c)
	}
	fmt.Fprintf(w, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">increments/s</text>`+"\n",
		float64(topPad)+plotH/2, float64(topPad)+plotH/2)
	fmt.Fprintln(w, "</svg>")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
