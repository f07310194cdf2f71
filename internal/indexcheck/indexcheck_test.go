package indexcheck

import (
	"testing"

	"cloud.google.com/go/firestore"
)

func index(fields ...IndexField) *File {
	return &File{Indexes: []Index{{CollectionGroup: "c", QueryScope: "COLLECTION", Fields: fields}}}
}

func TestServing(t *testing.T) {
	asc := func(f string) IndexField { return IndexField{FieldPath: f, Order: "ASCENDING"} }
	desc := func(f string) IndexField { return IndexField{FieldPath: f, Order: "DESCENDING"} }
	shape := Shape{Collection: "c", Equality: []string{"shard", "kind"},
		OrderBy: []Order{{"ts", true}, {firestore.DocumentID, true}}}
	for _, tc := range []struct {
		name string
		file *File
		want int
	}{
		{"exact", index(asc("shard"), asc("kind"), desc("ts")), 0},
		{"equality in other order", index(desc("kind"), asc("shard"), desc("ts")), 0},
		{"explicit id order", index(asc("shard"), asc("kind"), desc("ts"), desc(firestore.DocumentID)), 0},
		{"id order reversed", index(asc("shard"), asc("kind"), desc("ts"), asc(firestore.DocumentID)), -1},
		{"timestamp ascending", index(asc("shard"), asc("kind"), asc("ts")), -1},
		{"shard missing", index(asc("kind"), desc("ts")), -1},
		{"timestamp before shard", index(desc("ts"), asc("shard"), asc("kind")), -1},
		{"extra field", index(asc("shard"), asc("kind"), desc("ts"), asc("x")), -1},
		{"other collection", &File{Indexes: []Index{{CollectionGroup: "d", QueryScope: "COLLECTION", Fields: []IndexField{asc("shard"), asc("kind"), desc("ts")}}}}, -1},
		{"collection group scope", &File{Indexes: []Index{{CollectionGroup: "c", QueryScope: "COLLECTION_GROUP", Fields: []IndexField{asc("shard"), asc("kind"), desc("ts")}}}}, -1},
	} {
		if got := tc.file.Serving(shape); got != tc.want {
			t.Errorf("%s: Serving = %d, want %d", tc.name, got, tc.want)
		}
	}
}
