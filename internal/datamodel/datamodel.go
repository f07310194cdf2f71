// Package datamodel names shardcount's documents in Firestore, once:
// collections, fields and paths (docs/reference/data-model.md). Security
// rules, the indexes, the roll-up trigger and apps' listeners depend on
// them; every store builds its documents' names here.
package datamodel

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shardcount/shardcount/internal/windows"
)

// Collections.
const (
	Counters    = "counters"
	Shards      = "shards"           // counters/{id}/shards/{0..N-1}
	Keys        = "idempotency_keys" // counters/{id}/idempotency_keys/{hash}
	Slots       = "rollup_slots"     // counters/{id}/rollup_slots/{due}
	Members     = "members"          // counters/{id}/members/{uid}
	Windows     = "windows"          // counters/{id}/windows/{g}_{start}
	Sketches    = "sketches"         // counters/{id}/sketches/{g}_{start}_{shard}: a distinct counter's hours and days
	Bound       = "bound"            // counters/{id}/bound/guard
	Activity    = "counter_activity" // counter_activity/{id}
	Instruments = "instruments"      // the sharded-timestamps example
	// Erasures are the users whose erasure (eraseMember) began within an ID
	// token's life: began_at, written_at, expire_at (TTL).
	Erasures = "shardcount_erasures"
	// State holds the project's own bookkeeping (the reconcile cursor);
	// no rule lets clients read it.
	State = "shardcount"
)

// ShardDocument is the path pattern of shard documents, which the roll-up
// trigger watches.
const ShardDocument = Counters + "/{counterId}/" + Shards + "/{shardId}"

// Fields.
const (
	// Of a counter document.
	FieldNumShards    = "num_shards"
	FieldCount        = "count" // also of a shard and of a window's bucket
	FieldAsOf         = "rollup_as_of"
	FieldCreatedAt    = "created_at"
	FieldRollups      = "rollups"
	FieldShardCommits = "shard_commits"
	FieldSlowCommits  = "slow_commits"
	FieldWriteRate    = "write_rate"
	FieldActivityAsOf = "activity_as_of"
	FieldReshard      = "reshard"
	FieldOwner        = "owner"
	FieldUnique       = "unique"
	FieldChoices      = "choices"  // of a choice counter: what its members choose among
	FieldDistinct     = "distinct" // of a distinct counter: its count is an estimate
	// FieldEstimate, of a distinct counter's bucket of an hour or a day
	// (in place of count, which sums): the estimate of its users.
	FieldEstimate = "estimate"
	// FieldSketch, of a distinct counter's shard: its sketch's bytes.
	FieldSketch = "sketch"
	// FieldCounts, of a choice counter's document, shards and buckets:
	// {choice: members holding it} (see FieldCountOf).
	FieldCounts     = "counts"
	FieldOrigin     = "origin"
	FieldRanked     = "ranked" // also of a window's bucket
	FieldKind       = "kind"   // also of a window's bucket
	FieldDeleted    = "deleted"
	FieldDeletedAt  = "deleted_at"
	FieldPurgeAfter = "purge_after"
	FieldPurged     = "purged"
	FieldResetAt    = "reset_at"
	// FieldMemberKinds is true once every member document of the counter
	// names its kind, its uid and its counter.
	FieldMemberKinds = "member_kinds"
	// FieldAfter, of the member kinds' progress: how far reconcile named
	// them.
	FieldAfter = "after"

	// Of a shard.
	FieldCommits = "commits"
	FieldSlow    = "slow"
	// FieldTraceparent is set on a shard by an increment's commit when
	// telemetry is on: the W3C traceparent of the group commit's flush
	// that wrote it, which the roll-up's span links to (the trigger event
	// carries the shard).
	FieldTraceparent = "traceparent"

	// Of an idempotency key's record.
	FieldDelta    = "delta"
	FieldShard    = "shard"
	FieldMember   = "member"
	FieldChanged  = "changed"
	FieldChoice   = "choice" // also of a member document (of a choice counter)
	FieldPrevious = "previous"

	// Of a member document.
	FieldUID       = "uid"
	FieldCounterID = "counter_id" // also of a window's bucket
	FieldJoinedAt  = "joined_at"

	// Of a window's bucket.
	FieldGranularity = "granularity"
	FieldStart       = "start"
	// peak_0 … peak_5: the most (at least 0) a run of the bucket's last
	// changes from that slot on adds, while the bucket is its counter's
	// current one, 0 once the counter changed in a later bucket (of a
	// counter document's peaks, the running peak itself); run_0 … run_5
	// that peak kept after; carry_0 … carry_5: the bucket before's final
	// peak plus this bucket's count: what a rolling window starting in
	// that slot of the bucket before counts at most (docs/design/windows.md).
	FieldPeakPrefix    = "peak_"
	FieldRunPrefix     = "run_"
	FieldCarryPrefix   = "carry_"
	FieldCarriedPrefix = "carried_" // of a counter document's peaks: the bucket before's, each at least 0
	FieldGross         = "gross"    // of buckets written before peak: the sum of the changes that added

	// Of a counter document: the running peak of its current hour and day
	// buckets, {granularity: {start, peak_0, …, peak_5}}.
	FieldPeaks = "peaks"
	// FieldMomentum, of a counter document: {hour, count, rate, weight}, what
	// rising finds it by (windows.Momentum); FieldRise, of an hour's
	// bucket, its rise then.
	FieldMomentum = "momentum"
	FieldRise     = "rise"

	// Of a roll-up slot.
	FieldHolder = "holder"

	// Of the bound's guard: moved by each commit near the bound.
	FieldGuardCheckedAt = "checked_at"

	// Of an activity marker: a random shard value and a time, the sharded
	// timestamps of internal/shardedts, spelled here so that the data
	// model (and the core above it) does not import Firestore's client.
	FieldActivityShard = "shard"
	FieldActivityAt    = "timestamp"

	// Of the documents Firestore's TTL deletes: keys' records, slots,
	// buckets.
	FieldExpireAt = "expire_at"
	// Of an erasure: when it began, and when its record was written.
	FieldBeganAt   = "began_at"
	FieldKey       = "key" // an erasure's: the key of its page tokens (HMAC-SHA256)
	FieldWrittenAt = "written_at"
)

// Paths of documents and collections, relative to the database's
// documents.

func Counter(id string) string                  { return Counters + "/" + id }
func UnderCounter(id, collection string) string { return Counter(id) + "/" + collection }
func Shard(id string, k int) string             { return UnderCounter(id, Shards) + "/" + strconv.Itoa(k) }
func Member(id, uid string) string              { return UnderCounter(id, Members) + "/" + uid }
func Guard(id string) string                    { return UnderCounter(id, Bound) + "/guard" }
func MemberKindsProgress(id string) string      { return UnderCounter(id, Bound) + "/member_kinds" }
func Marker(id string) string                   { return Activity + "/" + id }
func ReconcileCursor() string                   { return State + "/reconcile" }
func Erasure(uid string) string                 { return Erasures + "/" + uid }

func Slot(id string, due time.Time) string {
	return UnderCounter(id, Slots) + "/" + strconv.FormatInt(due.UnixNano(), 10)
}

// SketchBucket is shard k's sketch of distinct counter id's bucket of g
// starting at start.
func SketchBucket(id string, g windows.Granularity, start time.Time, k int) string {
	return UnderCounter(id, Sketches) + "/" + windows.DocID(g, start) + "_" + strconv.Itoa(k)
}

func Bucket(id string, g windows.Granularity, start time.Time) string {
	return UnderCounter(id, Windows) + "/" + windows.DocID(g, start)
}

// Key is the record of an idempotency key, named by the SHA-256 of its
// user and key: any header value makes a valid document id, and users
// cannot share keys.
func Key(id, user, key string) string { return UnderCounter(id, Keys) + "/" + KeyHash(user, key) }

// KeyHash identifies an idempotency key of a user.
func KeyHash(user, key string) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(user)))
	h.Write(n[:])
	h.Write([]byte(user))
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// FieldCountOf is the field path of a choice's count (choices are plain
// field names: counter.ParseKinds).
func FieldCountOf(choice string) string { return FieldCounts + "." + choice }

// FieldPeak is the field of a window bucket's peak of slot s (while it is
// open); FieldRun and FieldCarry its peak kept and its carry, FieldCarried
// a counter document's carried peak.
func FieldPeak(s int) string    { return FieldPeakPrefix + strconv.Itoa(s) }
func FieldRun(s int) string     { return FieldRunPrefix + strconv.Itoa(s) }
func FieldCarry(s int) string   { return FieldCarryPrefix + strconv.Itoa(s) }
func FieldCarried(s int) string { return FieldCarriedPrefix + strconv.Itoa(s) }

// CounterOfMember is the counter whose member document of uid is at path;
// "" when path is no such document (an app's own collection named
// members).
func CounterOfMember(path, uid string) string {
	if !IsMembership(path, uid) {
		return ""
	}
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[0] != Counters {
		return ""
	}
	return parts[1]
}

// IsMembership reports whether path is a document of uid in a collection
// named members, anywhere (what the collection-group query of a user's
// memberships finds: a counter's, or an app's own).
func IsMembership(path, uid string) bool {
	parts := strings.Split(path, "/")
	return len(parts)%2 == 0 && parts[len(parts)-2] == Members && parts[len(parts)-1] == uid && !slices.ContainsFunc(parts, badSegment)
}

// badSegment reports whether s can be no collection or document id of a
// path: empty, "." or "..", reserved (__…__), too long or not UTF-8
// (Firestore's rules, which it answers with an error).
func badSegment(s string) bool {
	return s == "" || s == "." || s == ".." || len(s) > 1500 || !utf8.ValidString(s) ||
		len(s) >= 4 && strings.HasPrefix(s, "__") && strings.HasSuffix(s, "__")
}
