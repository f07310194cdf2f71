package service

import (
	"cmp"
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardcount/shardcount/internal/telemetry"
)

// startTelemetry turns OpenTelemetry on when the OTEL_* settings ask for
// it (internal/telemetry). Deployed, it flushes what is buffered when the
// platform stops the instance (SIGTERM), then exits as it would have.
func (s *Server) startTelemetry() {
	shutdown, err := telemetry.Setup(context.Background(), cmp.Or(s.getenv("K_SERVICE"), s.getenv("FUNCTION_TARGET"), "shardcount"), s.getenv)
	if err != nil {
		s.log.Error("telemetry is off: its settings are refused", "error", err.Error())
		return
	}
	s.shutdownTelemetry = shutdown
	if !telemetry.Enabled(s.getenv) || s.getenv("K_SERVICE") == "" {
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shutdown(ctx)
		os.Exit(0)
	}()
}

// Shutdown flushes the telemetry buffered, for a caller that stops the
// server itself (deployed, SIGTERM does it).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.shutdownTelemetry == nil {
		return nil
	}
	return s.shutdownTelemetry(ctx)
}
