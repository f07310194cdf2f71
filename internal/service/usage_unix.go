//go:build unix

package service

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a process uses, for load tests (Stats): Linux and the other Unix
// systems the functions and their developers run on.

// cpuSeconds is the process's user and system CPU time; 0 where getrusage
// fails.
func cpuSeconds() float64 {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// rss reads the resident set size from /proc/self/statm; 0 elsewhere.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
