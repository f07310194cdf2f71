// Package fsmodeltest opens a database on the model of Firestore
// (internal/fsmodel) for a test: its reads and commits at the model's
// clock, no emulator dialled.
package fsmodeltest

import (
	"testing"

	"github.com/shardcount/shardcount/internal/firestoredb"
)

// DB is project's database served by api (fsmodel.New of the test's
// clock, or a model the test wraps), closed when tb ends. It unsets
// FIRESTORE_EMULATOR_HOST for tb: a model must never reach an emulator.
func DB(tb testing.TB, project string, api firestoredb.Firestore) *firestoredb.DB {
	tb.Helper()
	tb.Setenv("FIRESTORE_EMULATOR_HOST", "")
	db, err := firestoredb.OnAPI(api, project, firestoredb.DefaultDatabase)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
