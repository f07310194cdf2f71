package auth

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/localdev/appcheckdev"
	"github.com/shardcount/shardcount/internal/logging"
)

// The Admin SDK's verification and the App Check API's consumption, against
// the local stand-in for Google's App Check service (which cannot run
// here), and the API's refusals as its reference describes them: 403 for
// an invalid token or a caller without the Token Verifier role, 400 for a
// token of an unsupported provider.
func TestAppsVerifyAndConsume(t *testing.T) {
	dev, err := appcheckdev.New("demo-apps")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	dev.Register(mux, "")
	refusing := 0 // the status the API answers with, when set
	mux.HandleFunc("/refusing/v1beta/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refusing)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"refused"}}`, refusing)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := logging.NewContext(context.Background(), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	apps, err := NewApps(ctx, "demo-apps", AppsOptions{JWKSURL: srv.URL + "/jwks", APIURL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	token, err := dev.Mint(appcheckdev.AppID(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if app, err := apps.Verify(ctx, token); err != nil || app != appcheckdev.AppID() {
		t.Fatalf("Verify: %q, %v", app, err)
	}
	if _, err := apps.Verify(ctx, token[:len(token)-4]+"AAAA"); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("a forged signature: %v, want UNAUTHENTICATED", err)
	}
	for i, want := range []bool{false, true} {
		if used, err := apps.Consume(ctx, token); err != nil || used != want {
			t.Errorf("consumption %d: used=%v %v, want %v", i+1, used, err, want)
		}
	}
	refused, err := NewApps(ctx, "demo-apps", AppsOptions{JWKSURL: srv.URL + "/jwks", APIURL: srv.URL + "/refusing/"})
	if err != nil {
		t.Fatal(err)
	}
	for status, code := range map[int]errs.Code{http.StatusForbidden: errs.Unavailable, http.StatusBadRequest: errs.Unauthenticated} {
		refusing = status
		if _, err := refused.Consume(ctx, token); errs.CodeOf(err) != code {
			t.Errorf("the API answers %d to a verified token: %v, want %s", status, err, code)
		}
	}
}
