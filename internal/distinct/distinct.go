// Package distinct holds the sketches of distinct kinds: approximate sets
// of members (HyperLogLog++, github.com/axiomhq/hyperloglog: a sparse form
// while small, 2¹⁴ dense registers above, about 0.81% standard error in
// about 12 KB). Only a hash of a member is kept, never the member, and a
// member added again changes nothing, so an add needs no idempotency key
// and a sketch cannot forget one member.
//
// The shards keep a sketch's bytes, so both what is hashed and the bytes
// are pinned here: the hash is this package's (SHA-256, not the
// library's, which a release may change), and testdata holds a sketch
// written by this version that every later one must read the same.
package distinct

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/axiomhq/hyperloglog"
)

// Precision is the registers' precision: 2¹⁴ registers.
const Precision = 14

// StandardError is the relative standard error of an estimate of a
// sketch of Precision: 1.04 / √2¹⁴.
var StandardError = 1.04 / math.Sqrt(1<<Precision)

// Sketch is an approximate set of members.
type Sketch struct{ hll *hyperloglog.Sketch }

// New returns an empty sketch.
func New() *Sketch {
	hll, err := hyperloglog.NewSketch(Precision, true)
	if err != nil {
		panic(err) // Precision is valid
	}
	return &Sketch{hll: hll}
}

// Parse reads a sketch's bytes; nil or empty bytes are an empty sketch.
func Parse(b []byte) (*Sketch, error) {
	s := New()
	if len(b) == 0 {
		return s, nil
	}
	if err := s.hll.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("distinct: a sketch of %d bytes does not parse: %w", len(b), err)
	}
	if p := b[1]; p != Precision { // the format's second byte: it would parse, and merge with none of ours
		return nil, fmt.Errorf("distinct: a sketch of precision %d, not %d", p, Precision)
	}
	return s, nil
}

// Bytes are the sketch as the shards keep it.
func (s *Sketch) Bytes() []byte {
	b, err := s.hll.MarshalBinary()
	if err != nil {
		panic(err) // marshaling a sketch does not fail
	}
	return b
}

// Add adds member.
func (s *Sketch) Add(member string) { s.hll.InsertHash(Hash(member)) }

// AddAll adds members and reports whether the sketch changed: false when
// adding them left its state as it was (each was in it, or, once its
// registers are dense, raised none), so that writing it back would store
// nothing new.
func (s *Sketch) AddAll(members []string) (changed bool) {
	before := s.canonical()
	for _, m := range members {
		s.Add(m)
	}
	return !bytes.Equal(before, s.canonical())
}

// canonical is the sketch's state as bytes that depend on nothing else.
// The library's own bytes depend on the order of adds too, until an
// estimate compacts its sparse form (its AppendBinary says so), so a copy
// is compacted: the sketch's bytes stay as they were written.
func (s *Sketch) canonical() []byte {
	c := s.hll.Clone()
	c.Estimate()
	b, err := c.MarshalBinary()
	if err != nil {
		panic(err) // marshaling a sketch does not fail
	}
	return b
}

// Merge adds the members of other.
func (s *Sketch) Merge(other *Sketch) error { return s.hll.Merge(other.hll) }

// Estimate is the number of distinct members added, approximately.
func (s *Sketch) Estimate() int64 { return int64(s.hll.Estimate()) }

// Hash is what a sketch keeps of a member: the first 8 bytes of the
// SHA-256 of its uid.
func Hash(member string) uint64 {
	sum := sha256.Sum256([]byte(member))
	return binary.BigEndian.Uint64(sum[:8])
}
