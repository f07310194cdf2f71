package report

import (
	"fmt"
	"io"
	"strings"
)

// SVG writes a grouped bar chart of increments per second by shard count,
// one bar per mode and concurrency.
func SVG(w io.Writer, s *Suite) {
	shards, conc := axes(s)
	type series struct {
		mode  string
		c     int
		color string
	}
	var all []series
	palette := map[string][]string{suiteModes[0]: {"#1a73e8", "#0b3d91"}, suiteModes[1]: {"#9aa0a6", "#5f6368"}, suiteModes[2]: {"#f9ab00", "#b06000"}}
	for i, c := range conc {
		for _, m := range suiteModes {
			if find(s, m, shards[0], c) != nil {
				all = append(all, series{m, c, palette[m][i%2]})
			}
		}
	}
	top := 0.0
	for _, r := range s.Increments {
		top = max(top, r.Throughput)
	}
	top = niceCeil(top)
	const (
		width, height       = 720, 400
		left, right, bottom = 80, 20, 72
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
			r := find(s, se.mode, n, se.c)
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
		x := left + (si%3)*215
		y := height - 34 + (si/3)*16
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s, c=%d</text>`+"\n",
			x, y, se.color, x+16, y+10, se.mode, se.c)
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

// GroupCommitSVG charts, by concurrency, the increments per second (left)
// and the commits per increment (right) of each shard count with group
// commit, against the raw client's rate.
func GroupCommitSVG(w io.Writer, s *Suite) {
	shards, conc := axes(s)
	const (
		width, height     = 760, 360
		panelW, panelH    = 300, 220
		left1, left2, top = 70, 450, 60
	)
	colors := []string{"#1a73e8", "#0b8043", "#a142f4"}
	topRate, topCPI := 0.0, 0.0
	for _, r := range s.Increments {
		topRate = max(topRate, r.Throughput)
		if r.Cost != nil {
			topCPI = max(topCPI, r.Cost.CommitsPerIncrement)
		}
	}
	topRate, topCPI = niceCeil(topRate), niceCeil(topCPI)
	x := func(left, i int) float64 {
		if len(conc) < 2 {
			return float64(left + panelW/2)
		}
		return float64(left) + float64(panelW)*float64(i)/float64(len(conc)-1)
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="15" font-weight="bold">Group commit on one hot counter, by concurrency (Firestore emulator)</text>`+"\n", left1)
	axes := func(left int, topV float64, title, unit string, decimals int) {
		fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, top-12, title)
		for i := 0; i <= 4; i++ {
			y := float64(top+panelH) - float64(panelH)*float64(i)/4
			fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+panelW, y)
			fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%.*f</text>`+"\n", left-6, y+4, decimals, topV*float64(i)/4)
		}
		for i, c := range conc {
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">c=%d</text>`+"\n", x(left, i), top+panelH+18, c)
		}
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+panelW/2, top+panelH+36, unit)
	}
	axes(left1, topRate, "increments/s", "concurrency", 0)
	axes(left2, topCPI, "Firestore commits per increment", "concurrency", 2)
	line := func(left int, color string, dash bool, pts []float64, topV float64) {
		var path []string
		for i, v := range pts {
			if v < 0 {
				continue
			}
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(left, i), float64(top+panelH)-float64(panelH)*v/topV))
		}
		style := ""
		if dash {
			style = ` stroke-dasharray="5,4"`
		}
		fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(path, " "), color, style)
	}
	for si, n := range shards {
		color := colors[si%len(colors)]
		var rates, raws, cpis []float64
		for _, c := range conc {
			g, r := find(s, suiteModes[0], n, c), find(s, suiteModes[2], n, c)
			rates, raws, cpis = append(rates, -1), append(raws, -1), append(cpis, -1)
			if g != nil {
				rates[len(rates)-1] = g.Throughput
				if g.Cost != nil {
					cpis[len(cpis)-1] = g.Cost.CommitsPerIncrement
				}
			}
			if r != nil {
				raws[len(raws)-1] = r.Throughput
			}
		}
		line(left1, color, false, rates, topRate)
		line(left1, color, true, raws, topRate)
		line(left2, color, false, cpis, topCPI)
		lx := left1 + si*170
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%d shard%s</text>`+"\n",
			lx, height-26, lx+20, height-26, color, lx+24, height-22, n, plural(n))
	}
	fmt.Fprintf(w, `<text x="%d" y="%d">solid: group commit; dashed: raw client</text>`+"\n", left1+3*170, height-22)
	fmt.Fprintln(w, "</svg>")
}
