package views

import (
	"context"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
)

// Storage is what documents keep: how many, and their size as Firestore
// bills storage (https://firebase.google.com/docs/firestore/storage-size):
// the emulator does not report sizes, so they are computed by those rules.
type Storage struct {
	Docs  int64 `json:"docs"`
	Bytes int64 `json:"bytes"`
}

// Kept is the storage of every document under doc's subcollections (not
// doc itself, which every counter has).
func Kept(ctx context.Context, doc *firestore.DocumentRef) (Storage, error) {
	var s Storage
	cols := doc.Collections(ctx)
	for {
		col, err := cols.Next()
		if err == iterator.Done {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		docs := col.Documents(ctx)
		for {
			d, err := docs.Next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				docs.Stop()
				return s, err
			}
			s.Docs++
			s.Bytes += DocumentSize(d.Ref.Path, d.Data())
		}
		docs.Stop()
	}
}

// DocumentSize is a document's storage size: its name (each collection
// and document id of its path, +1 each, and 16), its fields (each name
// +1, and its value) and 32 bytes.
func DocumentSize(path string, fields map[string]any) int64 {
	return nameSize(path) + mapSize(fields) + 32
}

// nameSize is a document name's size; path may be a full resource name.
func nameSize(path string) int64 {
	if _, rel, ok := strings.Cut(path, "/documents/"); ok {
		path = rel
	}
	n := int64(16)
	for _, seg := range strings.Split(path, "/") {
		n += int64(len(seg)) + 1
	}
	return n
}

func mapSize(m map[string]any) int64 {
	var n int64
	for k, v := range m {
		n += int64(len(k)) + 1 + valueSize(v)
	}
	return n
}

// valueSize is the size of a value of the types counters' documents hold
// (no geopoints).
func valueSize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v)) + 1
	case []byte:
		return int64(len(v))
	case bool, nil:
		return 1
	case int64, float64, time.Time:
		return 8
	case *firestore.DocumentRef:
		return nameSize(v.Path)
	case map[string]any:
		return mapSize(v)
	case []any:
		var n int64
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	}
	return 0
}
