// Package e2e drives the deployed shape of the functions: functions-framework
// serving every registered function in this process, against the Firestore
// emulator started by scripts/test.sh. AUTH is off here; e2e/secured covers
// authentication.
package e2e

import (
	"fmt"
	"os"
	"testing"

	_ "github.com/shardcount/shardcount" // registers the functions

	"github.com/shardcount/shardcount/internal/testenv"
)

var (
	base    string // functions-framework base URL
	project string // this binary's emulator project
)

func TestMain(m *testing.M) {
	if _, err := testenv.EmulatorHost(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project = testenv.NewProjectID("e2e")
	testenv.Setenv(map[string]string{
		"GOOGLE_CLOUD_PROJECT": project,
		"AUTH":                 "off",
		"LOG_LEVEL":            "warn",
	})
	var err error
	if base, err = testenv.StartFunctions(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func url(function string) string { return base + "/" + function }
