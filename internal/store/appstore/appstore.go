// Package appstore reads the app's own documents, which shardcount never
// creates: whether one exists (a kind's keys_in, the first use of a
// counter of one of its documents).
package appstore

import (
	"context"

	fs "github.com/shardcount/shardcount/internal/firestoredb"
	"github.com/shardcount/shardcount/internal/store/shared"
)

// Store is the app's documents in one database.
type Store struct{ db *fs.DB }

// New returns the store on base.
func New(base *shared.Base) *Store { return &Store{db: base.DB} }

// Exists reads a document of the app's, at path, now: whether it exists.
func (s *Store) Exists(ctx context.Context, path string) (bool, error) {
	doc, err := s.db.Get(ctx, s.db.Name(path))
	if err != nil {
		return false, fs.Classify(err, "read "+path)
	}
	return doc != nil, nil
}
