package errs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardcount/shardcount/internal/errs"
)

// TestMessagesEchoAPrefix: a message quotes what a client sent (%q) by its
// first 64 bytes, whole characters, so a 900 KB choice makes a short 400;
// what the project itself formats (%s, %d) stays whole.
func TestMessagesEchoAPrefix(t *testing.T) {
	huge := strings.Repeat("é", 450_000)
	e := errs.Invalid("choice", "%q is not a choice of kind %q (choices: %s; %d%%)", huge, "reactions", strings.Repeat("x", 100), 7)
	if len(e.Message) > 300 || !strings.Contains(e.Message, `"reactions"`) || !strings.Contains(e.Message, strings.Repeat("x", 100)) || !strings.HasSuffix(e.Message, "7%)") {
		t.Errorf("%d bytes: %.300s", len(e.Message), e.Message)
	}
	if want := `choice "` + strings.Repeat("é", 32) + `…" is not`; !strings.HasPrefix(e.Message, want) {
		t.Errorf("%.120s, want it to begin %s", e.Message, want)
	}
	if e := errs.New(errs.NotFound, "%q and %q", "a"); !strings.Contains(e.Message, "MISSING") {
		t.Errorf("too few arguments: %s", e.Message)
	}
	type name string
	long := strings.Repeat("n", 1000)
	if e := errs.New(errs.NotFound, "%q %q %5.2q %d%%", name(long), errors.New(long), long, 3); len(e.Message) > 250 || !strings.HasSuffix(e.Message, " 3%") {
		t.Errorf("a named string, an error and flags: %d bytes: %.300s", len(e.Message), e.Message)
	}
}

// TestUnderNamesTheField: an item's error names its place and its field,
// also when its message does not begin with the field.
func TestUnderNamesTheField(t *testing.T) {
	e := errs.Under("increments[0].", &errs.Error{Code: errs.PermissionDenied, Field: "member", Message: "only admins name a member"})
	if got := e.(*errs.Error).Message; got != "increments[0].member: only admins name a member" {
		t.Errorf("%q", got)
	}
	e = errs.Under("increments[0].", errs.Invalid("delta", "must be 1"))
	if got := e.(*errs.Error).Message; got != "increments[0].delta must be 1" {
		t.Errorf("%q", got)
	}
}
