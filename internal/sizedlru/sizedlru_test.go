package sizedlru

import (
	"fmt"
	"strings"
	"testing"
)

func TestBoundedInBytesAndInEntries(t *testing.T) {
	size := func(k string, v string) int { return len(k) + len(v) }
	c := New(100, 1000, size)
	for i := range 50 { // 50 entries of 100 bytes: 10 fit
		c.Add(fmt.Sprintf("k%02d", i), strings.Repeat("v", 97))
	}
	if c.Len() != 10 || c.Bytes() != 1000 {
		t.Errorf("%d entries of %d bytes, want 10 of 1000", c.Len(), c.Bytes())
	}
	if _, ok := c.Peek("k39"); ok {
		t.Error("an entry older than the last 10 is held")
	}
	if _, ok := c.Get("k49"); !ok {
		t.Error("the newest entry is gone")
	}
	c.Add("k49", "small") // replacing an entry counts its new size only
	if c.Bytes() != 900+3+5 {
		t.Errorf("%d bytes after replacing an entry, want %d", c.Bytes(), 908)
	}
	c.Remove("k49")
	if c.Bytes() != 900 || c.Contains("k49") {
		t.Errorf("%d bytes after removing an entry, want 900", c.Bytes())
	}
	small := New(3, 1<<20, size)
	for i := range 10 {
		small.Add(fmt.Sprint(i), "")
	}
	if small.Len() != 3 || small.Bytes() != 3 {
		t.Errorf("%d entries of %d bytes, want 3 of 3: the entry bound", small.Len(), small.Bytes())
	}
	huge := New(3, 10, size)
	huge.Add("big", strings.Repeat("v", 100)) // alone past the bound: kept until another comes
	huge.Add("next", "")
	if huge.Contains("big") || !huge.Contains("next") {
		t.Error("an entry past the bound stayed when another came")
	}
}

func TestInstanceMemoryIsKnown(t *testing.T) {
	if m := InstanceMemory(); m <= 0 || m >= 1<<50 {
		t.Errorf("InstanceMemory = %d", m)
	}
	t.Logf("this instance: %d MiB; a 16th: %d MiB", InstanceMemory()>>20, Share(1.0/16)>>20)
}
