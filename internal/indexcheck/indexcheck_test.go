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

func TestRangeAndSingleField(t *testing.T) {
	asc := func(f string) IndexField { return IndexField{FieldPath: f, Order: "ASCENDING"} }
	desc := func(f string) IndexField { return IndexField{FieldPath: f, Order: "DESCENDING"} }
	history := Shape{Collection: "c", Equality: []string{"g"}, Range: []string{"start"}, OrderBy: []Order{{"start", false}}}
	if index(asc("g"), asc("start")).Serving(history) != 0 {
		t.Error("(g, start) does not serve g == and a range on start")
	}
	if index(asc("g"), asc("other"), asc("start")).Serving(history) != -1 {
		t.Error("an index with a field between serves it")
	}
	rangeNotFirst := Shape{Collection: "c", Range: []string{"count"}, OrderBy: []Order{{"name", false}, {"count", true}}}
	if index(asc("name"), desc("count")).Serving(rangeNotFirst) != -1 {
		t.Error("a range on a field ordered second is served")
	}
	f := &File{FieldOverrides: []FieldOverride{{CollectionGroup: "c", FieldPath: "ts"}}}
	for _, tc := range []struct {
		name  string
		shape Shape
		want  bool
	}{
		{"equality by id", Shape{Collection: "c", Equality: []string{"owner"}, OrderBy: []Order{{firestore.DocumentID, false}}}, true},
		{"id order only", Shape{Collection: "c", OrderBy: []Order{{firestore.DocumentID, false}}}, true},
		{"one field, range and order", Shape{Collection: "c", Range: []string{"count"}, OrderBy: []Order{{"count", true}}}, true},
		{"one field, then id the same way", Shape{Collection: "c", OrderBy: []Order{{"count", true}, {firestore.DocumentID, true}}}, true},
		{"one field, then id the other way", Shape{Collection: "c", OrderBy: []Order{{"count", true}, {firestore.DocumentID, false}}}, false},
		{"equality and an order", Shape{Collection: "c", Equality: []string{"g"}, OrderBy: []Order{{"start", false}}}, false},
		{"a collection group", Shape{Collection: "c", CollectionGroup: true, Equality: []string{"g"}}, false},
		{"an exempt field", Shape{Collection: "c", OrderBy: []Order{{"ts", true}}}, false},
	} {
		if got := f.SingleField(tc.shape); got != tc.want {
			t.Errorf("%s: SingleField = %v, want %v", tc.name, got, tc.want)
		}
	}
}
