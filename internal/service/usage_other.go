//go:build !unix

package service

// Elsewhere (Windows) load tests report no process usage.

func cpuSeconds() float64 { return 0 }

func rss() int64 { return 0 }
