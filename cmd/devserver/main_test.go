package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestSlowClientsAreCutOff: a client that sends half its headers and waits
// loses its connection (http.ListenAndServe, which funcframework.Start uses,
// would keep it forever).
func TestSlowClientsAreCutOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server("", http.NotFoundHandler(), timeouts{header: 200 * time.Millisecond, read: time.Second, write: time.Second, idle: time.Second})
	go srv.Serve(l)
	defer srv.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")) // and never the blank line
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(c)
	if err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("the connection stayed open %s (err %v), want it closed after the header timeout", time.Since(start), err)
	}
	if serving.header <= 0 || serving.read <= 0 || serving.idle <= 0 {
		t.Errorf("the devserver serves without timeouts: %+v", serving)
	}
}

// TestScheduleCallsReconcile: the local stand-in for Cloud Scheduler
// posts {} to reconcileCounters on its schedule.
func TestScheduleCallsReconcile(t *testing.T) {
	calls := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls <- r.Method + " " + r.URL.Path + " " + string(b)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go schedule(ctx, srv.URL+"/reconcileCounters", 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range 2 {
		select {
		case got := <-calls:
			if got != "POST /reconcileCounters {}" {
				t.Fatalf("scheduled call: %s", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no scheduled call")
		}
	}
}
