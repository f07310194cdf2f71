// Package counter holds the rules of a sharded counter that do not depend on
// where it is stored: valid ids, shard limits, the shard-count heuristic and
// the deltas a write may carry.
//
// A counter with N shards accepts about N times the write rate of a single
// document, because each write lands on one of N documents chosen at random;
// its value is the sum of the shards.
package counter

import (
	"crypto/rand"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/windows"
)

// Limits of the HTTP contract.
const (
	MinShards     = 1
	MaxShards     = 1000
	MaxDelta      = 1_000_000_000
	MaxIDLength   = 128
	DefaultShards = 10
	// MaxCount bounds a counter's value either way: 2^53 − 1, the largest
	// integer a JavaScript client (and any JSON reader using doubles)
	// reads exactly. An increment that could take a counter past it is
	// refused.
	MaxCount = 1<<53 - 1
	// CheckedZone is how close to ±MaxCount a counter's known value must be
	// for each increment commit to sum its shards first: nearer, the bound
	// is checked against the exact value; further, against what the
	// instance knows (see internal/store/incrementstore's bound.go).
	CheckedZone = 1 << 50
	// MaxReset bounds the value a reset sets, either way. A reset moves a
	// counter by any amount in one commit, which the other instances'
	// known values do not see until they sum again; a counter set outside
	// the checked zone is still more than CheckedZone from the bound, so
	// no instance crosses it meanwhile.
	MaxReset = MaxCount - CheckedZone
)

// Add returns a + b, and false when the sum overflows int64.
func Add(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// InBound reports whether v is a value a counter may hold: |v| <= MaxCount.
func InBound(v int64) bool { return v >= -MaxCount && v <= MaxCount }

// Saturated reports whether v is where Firestore's increment transform
// stops when a sum overflows int64: part of a delta may have been lost.
func Saturated(v int64) bool { return v == math.MaxInt64 || v == math.MinInt64 }

// Counter is a counter document: its shard count and its roll-up.
type Counter struct {
	ID        string
	NumShards int
	// Count is the value as of AsOf: every shard write committed at or
	// before AsOf is included.
	Count int64
	AsOf  time.Time
	// Version is the document's last update time (a write precondition).
	Version time.Time
	// Sums are the shard sums Count was taken from.
	Sums Sums
	// WriteRate is the roll-up's estimate of shard commits per second.
	WriteRate float64
	// ActivityAsOf is when Sums.Commits and Sums.Slow were summed (with
	// automatic sharding only): the baseline of WriteRate.
	ActivityAsOf time.Time
	// Peaks are the running peaks of the counter's current hour and day
	// buckets, by granularity; nil for a document written before peaks
	// were kept.
	Peaks map[windows.Granularity]windows.Peak
	// Momentum is what rising finds the counter by (windows.Momentum).
	Momentum windows.Momentum
	// Reshard is the last change of the shard count, if any.
	Reshard Reshard
	// Owner is the uid of the user who created the counter; "" when it was
	// created without authentication (AUTH=off) or by an admin's backend.
	Owner string
	// Origin says who created it, which bounds what it may become.
	Origin Origin
	// Kind is the declared kind of a counter its first use created
	// (Origin ByKind): the part of its id before the colon.
	Kind string
	// Ranked counters appear in topCounters (a kind's counters as the kind
	// says, an admin's by default, an end user's once an admin marks it).
	Ranked bool
	// Mode is how the counter counts: every increment, or users (each a
	// member document, members/{uid}: its value is their number), or
	// distinct users estimated from the shards' sketches
	// (internal/distinct: Count is an estimate).
	Mode Mode
	// Choices, of a choice counter: what each member chose among, as its
	// kind declared them when it was created.
	Choices []string
	// Counts are a choice counter's members by choice, as of AsOf.
	Counts    map[string]int64
	CreatedAt time.Time
	// MemberKinds is true once every member document names the counter's
	// kind (always for a counter of this version; reconcile names those of
	// before).
	MemberKinds bool
	// ResetAt is the time of the last reset, if any: every reset changes
	// the document, so two resets read at the same version cannot both
	// commit (see incrementstore.Store.Reset).
	ResetAt time.Time
	// Deleted is set on the document of a deleted counter (a tombstone)
	// until everything under it is gone.
	Deleted Deletion
	// Legacy is set when the document predates Origin and Ranked (written
	// by an earlier version): they are inferred from Owner, and the next
	// roll-up or reconcile writes them.
	Legacy bool
}

// Origin is who created a counter.
type Origin string

const (
	// ByAdmin: an admin (an app's backend), or anyone with AUTH=off.
	ByAdmin Origin = "admin"
	// ByUser: an end user (USER_CREATE=on), who owns it.
	ByUser Origin = "user"
	// ByKind: the first increment of an id of a declared kind.
	ByKind Origin = "kind"
)

// MaxShardsFor is the most shards a counter may reach by its owner's
// reshard or automatic sharding: userMax (USER_MAX_SHARDS) for one an end
// user created, MaxShards otherwise. A counter stored before origins were
// recorded counts as an end user's when it has an owner.
func (c Counter) MaxShardsFor(userMax int) int {
	if c.Origin == ByUser || c.Origin == "" && c.Owner != "" {
		return min(userMax, MaxShards)
	}
	return MaxShards
}

// Rollup is one write of a counter's roll-up: the counter document as Next
// says, if it is still at Next.Version (a precondition), in one commit with
// the change added to the counter's time windows.
type Rollup struct {
	Next Counter
	// Change is Next.Count minus the count the document held: what was
	// counted since the previous roll-up, added to the buckets holding
	// Next.AsOf.
	Change int64
	// Changes are a choice counter's changes by choice (Next.Counts less
	// the document's), added to the same buckets.
	Changes map[string]int64
	// EstimateSince, when not zero, has the commit set a distinct
	// counter's hours and days it reached from then (the roll-up before's
	// read time, or its creation: windows.Calendar.Reached) to the
	// estimate of their sketches; its Change is 0.
	EstimateSince time.Time
	// Reshard writes Next.NumShards and Next.Reshard too.
	Reshard bool
	// Correct, when not 0, is added to one shard in the same commit, and
	// CorrectCounts to its counts: reconcile's audit of a unique counter
	// brings the shards to its member count (and a choice counter's to its
	// members' choices).
	Correct       int64
	CorrectCounts map[string]int64
	// MirrorPath, when not "", is the app's document whose field
	// MirrorField the commit sets to the count too (a kind's mirror), if
	// the document exists.
	MirrorPath, MirrorField string
}

// Deletion records a counter's deletion. Instances that cached its shard
// count before may write shards until PurgeAfter; the purge that follows
// then removes the last documents, and the id can be used again.
type Deletion struct {
	At, PurgeAfter time.Time
	// Purged counts the documents its purge deleted so far.
	Purged int64
}

// Offers reports whether choice is one of a choice counter's choices.
func (c Counter) Offers(choice string) bool { return slices.Contains(c.Choices, choice) }

// CountsAs reports whether counter c counts as o does: the same mode, of
// the same choices.
func (c Counter) CountsAs(o Counter) bool {
	return c.Mode == o.Mode && slices.Equal(c.Choices, o.Choices)
}

// Incarnation names the counter's creation: an id deleted and created
// again is another incarnation, which nothing remembered of the first
// reaches.
func (c Counter) Incarnation() string {
	return c.ID + "@" + strconv.FormatInt(c.CreatedAt.UnixNano(), 10)
}

// IsDeleted reports whether the document is a deleted counter's tombstone.
func (c Counter) IsDeleted() bool { return !c.Deleted.At.IsZero() }

// Sums are the sums over a counter's shard documents, read in one
// aggregation.
type Sums struct {
	Count int64
	// Counts are a choice counter's sums by choice.
	Counts map[string]int64
	// Commits is how many commits wrote to the shards, and Slow how many
	// of them followed a slow or contended commit of the same counter
	// (evidence for automatic sharding).
	Commits, Slow int64
	// Written is the latest write of a shard, where the sums read the
	// shards themselves (a distinct counter's sketches): one after the
	// roll-up's read time is one whose event was lost, though its
	// estimate may be unchanged (a viewer of before, back in a new hour).
	Written time.Time
}

// Reshard records a change of a counter's shard count.
type Reshard struct {
	From, To int
	At       time.Time
	// MergeUntil is set when shrinking: until then instances may still
	// write to shards >= To (they cache the shard count), so merging them
	// into shards < To goes on. MergedAt is when the last merge left no
	// shard >= To.
	MergeUntil time.Time
	MergedAt   time.Time
	Reason     string
}

// Merging reports whether shards >= To may still exist.
func (r Reshard) Merging() bool { return !r.MergeUntil.IsZero() && r.MergedAt.IsZero() }

// MergeTarget is the shard a shard k >= n is merged into when shrinking to
// n shards.
func MergeTarget(k, n int) int { return k % n }

// ValidateID checks a counter id: 1–128 characters of [A-Za-z0-9_.-], not
// "." or "..", and not of the reserved form __*__. Such ids are valid
// Firestore document ids and safe in URLs without escaping.
func ValidateID(id string) error {
	const field = "counter_id"
	switch {
	case id == "":
		return errs.Invalid(field, "is required")
	case len(id) > MaxIDLength:
		return errs.Invalid(field, "must be at most %d characters", MaxIDLength)
	case id == "." || id == "..":
		return errs.Invalid(field, "must not be %q", id)
	case len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"):
		return errs.Invalid(field, "must not start and end with \"__\" (reserved by Firestore)")
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return errs.Invalid(field, "may contain only letters, digits, '_', '.', '-' and ':' (a counter of a kind: KIND:KEY)")
		}
	}
	return nil
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == ':'
}

// NewID returns a random id of 26 characters (130 bits, base32), valid
// under ValidateID.
func NewID() string { return rand.Text() }

// ValidateShards checks a requested shard count.
func ValidateShards(n int64) error {
	if n < MinShards || n > MaxShards {
		return errs.Invalid("num_shards", "must be between %d and %d", MinShards, MaxShards)
	}
	return nil
}

// PostType says who can see the post a counter belongs to.
type PostType string

const (
	Public    PostType = "public"
	Protected PostType = "protected"
)

// ParsePostType accepts "public", "protected", or "" (public).
func ParsePostType(s string) (PostType, error) {
	switch PostType(s) {
	case "", Public:
		return Public, nil
	case Protected:
		return Protected, nil
	}
	return "", errs.Invalid("post_type", "must be \"public\" or \"protected\"")
}

// Followers needed per shard. A shard document takes about one sustained
// write per second; we assume at the peak of a post's life about 1 in 1,000
// followers of a public post acts in the same second (public posts are shared
// beyond the followers), and 1 in 10,000 for a protected one (only followers
// see it).
const (
	followersPerShardPublic    = 1_000
	followersPerShardProtected = 10_000
)

// ShardsFor is the shard-count heuristic of createCounter:
//
//	shards = clamp(ceil(followers / k), 1, 1000)
//	k = 1,000 for public posts, 10,000 for protected ones.
func ShardsFor(followers int64, pt PostType) int {
	k := int64(followersPerShardPublic)
	if pt == Protected {
		k = followersPerShardProtected
	}
	if followers <= 0 {
		return MinShards
	}
	n := followers / k // ceil without followers+k-1, which overflows near MaxInt64
	if followers%k != 0 {
		n++
	}
	return int(min(max(n, MinShards), MaxShards))
}

// ValidateFollowers checks the heuristic's input.
func ValidateFollowers(n int64) error {
	if n < 0 {
		return errs.Invalid("followers_count", "must not be negative")
	}
	return nil
}

// ValidateResetValue checks the value a reset sets: at most MaxReset
// either way.
func ValidateResetValue(v int64) error {
	if v > MaxReset || v < -MaxReset {
		return errs.Invalid("count", "must be between -%d and %d: a reset may not set a counter within 2^50 of ±(2^53 − 1), where every increment must sum its shards first", int64(MaxReset), int64(MaxReset))
	}
	return nil
}

// ValidateDelta checks a write's delta: not zero, at most MaxDelta either way.
func ValidateDelta(d int64) error {
	if d == 0 {
		return errs.Invalid("delta", "must not be 0")
	}
	if d > MaxDelta || d < -MaxDelta {
		return errs.Invalid("delta", "must be between -%d and %d", MaxDelta, MaxDelta)
	}
	return nil
}

// DeltaFor maps an action_type ("increment", "decrement";
// docs/reference/api.md) to a delta.
func DeltaFor(action string) (int64, error) {
	switch action {
	case "increment":
		return 1, nil
	case "decrement":
		return -1, nil
	}
	return 0, errs.Invalid("action_type", "must be \"increment\" or \"decrement\"")
}

// ValidateMemberID checks that a uid can name a member document (Firebase
// uids are up to 128 characters, but custom tokens may carry any string).
func ValidateMemberID(uid string) error {
	switch {
	case uid == "":
		return errs.New(errs.Unauthenticated, "a unique counter counts users: sign in (Authorization: Bearer <Firebase ID token>)")
	case len(uid) > 128 || strings.Contains(uid, "/") || uid == "." || uid == ".." ||
		len(uid) >= 4 && strings.HasPrefix(uid, "__") && strings.HasSuffix(uid, "__"):
		return errs.New(errs.InvalidArgument, "the caller's uid cannot name a member document of a unique counter")
	}
	return nil
}

// ValidateUID checks a uid sent in request field: one that can name a
// member document (ValidateMemberID), and not empty.
func ValidateUID(field, uid string) error {
	if uid == "" || ValidateMemberID(uid) != nil {
		return errs.Invalid(field, "must be a Firebase uid: 1 to 128 characters, no '/', not '.' or '..' or __…__")
	}
	return nil
}

// Membership is one of a user's member documents: its counter, when the
// user joined, and its path (a cursor).
type Membership struct {
	CounterID, Path string
	JoinedAt        time.Time
}

// Member is one member of a unique counter.
type Member struct {
	UID      string
	JoinedAt time.Time
	Choice   string // of a choice counter's member
}
