package counter

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	dm "github.com/shardcount/shardcount/internal/datamodel"
)

// Kind is a kind of counters an app declares once (COUNTER_KINDS): the
// counter id "KIND:KEY" names a counter of kind KIND, which its first
// increment or like creates, with the kind's settings, in the commit that
// counts it. No end user owns it.
type Kind struct {
	Name string `json:"-"`
	// Unique counters count distinct users (likes).
	Unique bool `json:"unique"`
	// NumShards of a new counter of the kind; 0: DefaultShards.
	NumShards int `json:"-"`
	// Ranked: topCounters shows the kind's counters (default true).
	Ranked *bool `json:"ranked"`
	// Decrement says who may send a negative delta to a plain counter of
	// the kind: "admins" (the default: views only go up) or "users". On a
	// unique counter anyone takes back their own like.
	Decrement string `json:"-"`
	// AutoSharding: automatic sharding may grow the kind's counters (with
	// AUTO_SHARDING=on; default true).
	AutoSharding *bool `json:"auto_sharding"`
	// KeysIn is a collection of the app's ("posts"): an end user's first
	// use of KIND:KEY needs the document KEYS_IN/KEY, so users count only
	// what the app made, and mint no counter (a ranked one) of their own.
	KeysIn string `json:"-"`
	// JoinOnly: on a unique kind, an end user joins and never leaves (a
	// viewer cannot un-view); admins may still remove a member.
	JoinOnly bool `json:"join_only"`
	// Choices make a choice kind (reactions, polls): each user holds at
	// most one of them per counter, and may switch or remove it; the
	// counter counts the people with a choice, and each choice's.
	Choices []string `json:"choices"`
	// Distinct kinds count distinct users approximately (unique viewers at
	// any scale): each shard keeps a sketch (internal/distinct), no member
	// document; a member added again changes nothing, and none is removed.
	Distinct bool `json:"distinct"`
	// Mirror, with KeysIn, is a field of the app's document KEYS_IN/KEY
	// the roll-up writes the count of KIND:KEY into (a choice kind's: its
	// count and counts), in its commit, when the document exists: the
	// app's queries and listeners of its documents carry the count.
	Mirror string `json:"-"`
}

// Kinds are the declared kinds by name.
type Kinds map[string]Kind

// kindName is what a kind may be called: it starts a counter id.
var kindName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// mirrorName is what a mirrored field may be called: a top-level field of
// the app's document, named without quoting.
var mirrorName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// choiceName is what a choice may be called: a plain Firestore field
// name (counts.<choice>), short enough for a label.
var choiceName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)

// MaxChoices bounds a choice kind's choices: each is a field of every
// shard it is chosen on, and a strong read sums each.
const MaxChoices = 20

// ParseKinds reads COUNTER_KINDS: a JSON object of kinds, each an object
// of the options above ("" or "{}": none). Strictly: an unknown option, a
// name of another case ("Choices"), a kind or option given twice, and an
// option given empty are errors.
func ParseKinds(s string) (Kinds, error) {
	out := Kinds{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var raw map[string]jsontext.Value
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("must be a JSON object of kinds, each once, such as {\"likes\": {\"unique\": true}}: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if !kindName.MatchString(name) {
			return nil, fmt.Errorf("kind %q: a kind's name is 1 to 40 lowercase letters, digits, '_' or '-', starting with a letter", name)
		}
		var options map[string]jsontext.Value
		if err := json.Unmarshal(raw[name], &options); err != nil {
			return nil, fmt.Errorf("kind %q: must be an object of options, each once: %v", name, err)
		}
		for option := range options {
			if !slices.Contains(kindOptions, option) {
				return nil, fmt.Errorf("kind %q: unknown option %q (options: %s)", name, option, strings.Join(kindOptions, ", "))
			}
		}
		var given struct {
			Kind
			NumShards *int    `json:"num_shards"`
			Decrement *string `json:"decrement"`
			KeysIn    *string `json:"keys_in"`
			Mirror    *string `json:"mirror"`
		}
		if err := json.Unmarshal(raw[name], &given); err != nil {
			return nil, fmt.Errorf("kind %q: %v", name, err)
		}
		k := given.Kind
		k.NumShards, k.Decrement, k.KeysIn, k.Mirror = deref(given.NumShards), deref(given.Decrement), deref(given.KeysIn), deref(given.Mirror)
		if err := k.validate(given.NumShards != nil, given.Decrement != nil, given.KeysIn != nil, given.Mirror != nil); err != nil {
			return nil, fmt.Errorf("kind %q: %v", name, err)
		}
		k.Name = name
		for _, other := range out {
			if k.Mirror != "" && other.KeysIn == k.KeysIn && other.Mirror == k.Mirror {
				return nil, fmt.Errorf("kind %q: mirror %q of %q is kind %q's too: each would overwrite the other's count", name, k.Mirror, k.KeysIn, other.Name)
			}
		}
		out[name] = k
	}
	return out, nil
}

// kindOptions are the options a kind may have, by name.
var kindOptions = []string{"unique", "join_only", "choices", "distinct", "num_shards", "ranked", "decrement", "auto_sharding", "keys_in", "mirror"}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// validate checks a kind's options against each other; the flags say which
// options were given (given empty, an option is an error).
func (k Kind) validate(numShards, decrement, keysIn, mirror bool) error {
	if numShards && (k.NumShards < MinShards || k.NumShards > MaxShards) {
		return fmt.Errorf("num_shards must be between %d and %d", MinShards, MaxShards)
	}
	if decrement && k.Decrement != "admins" && k.Decrement != "users" {
		return fmt.Errorf("decrement must be \"admins\" or \"users\"")
	}
	if k.Unique && decrement {
		return fmt.Errorf("a unique kind's likes are taken back by their users; decrement is for plain kinds")
	}
	if k.JoinOnly && !k.Unique {
		return fmt.Errorf("join_only goes with unique: true (members who cannot leave)")
	}
	if k.Distinct && (k.Unique || k.JoinOnly || k.Choices != nil || decrement || k.AutoSharding != nil && *k.AutoSharding) {
		return fmt.Errorf("distinct counts each user once, approximately, and never removes one: it goes without unique, join_only, choices, decrement or auto_sharding")
	}
	if k.Choices != nil && (k.Unique || k.JoinOnly || decrement) {
		return fmt.Errorf("choices count people, one choice each: they go without unique, join_only or decrement")
	}
	if k.Choices != nil {
		if err := validateChoices(k.Choices); err != nil {
			return err
		}
	}
	if keysIn && !isCollectionPath(k.KeysIn) {
		return fmt.Errorf("keys_in must be a collection path such as \"posts\" or \"forums/f1/posts\", of at most 1,024 bytes and 97 segments")
	}
	if top, _, _ := strings.Cut(k.KeysIn, "/"); keysIn && slices.Contains(ours, top) {
		return fmt.Errorf("keys_in %q is under shardcount's own collection %q: name a collection of your app's", k.KeysIn, top)
	}
	if mirror && (!keysIn || !mirrorName.MatchString(k.Mirror) || isReserved(k.Mirror)) {
		return fmt.Errorf("mirror goes with keys_in, and names a field of its documents: 1 to 64 letters, digits or '_', not starting with a digit, nor both starting and ending with \"__\" (Firestore's own)")
	}
	return nil
}

// validateChoices checks a choice kind's choices: 1 to MaxChoices
// distinct names.
func validateChoices(choices []string) error {
	if len(choices) == 0 || len(choices) > MaxChoices {
		return fmt.Errorf("choices must hold 1 to %d names", MaxChoices)
	}
	for i, c := range choices {
		if !choiceName.MatchString(c) {
			return fmt.Errorf("choice %q: a choice is 1 to 30 lowercase letters, digits or '_', starting with a letter", c)
		}
		if slices.Contains(choices[:i], c) {
			return fmt.Errorf("choice %q is declared twice", c)
		}
	}
	return nil
}

// Of returns the kind of counter id ("KIND:KEY"), if it is declared.
func (ks Kinds) Of(id string) (Kind, bool) {
	name, _, ok := strings.Cut(id, ":")
	if !ok {
		return Kind{}, false
	}
	k, ok := ks[name]
	return k, ok
}

// Counter is the counter id of the kind, as its first use creates it.
func (k Kind) Counter(id string) Counter {
	n := k.NumShards
	if n == 0 {
		n = DefaultShards
	}
	return Counter{ID: id, Kind: k.Name, NumShards: n, Mode: k.Mode(), Choices: k.Choices, Origin: ByKind, Ranked: k.Ranked == nil || *k.Ranked}
}

// KeyDocument is the path of the app's document that counter id ("KIND:KEY")
// of the kind counts, with KeysIn; false when the key cannot name one.
func (k Kind) KeyDocument(id string) (string, bool) {
	_, key, _ := strings.Cut(id, ":")
	if !isDocumentID(key) {
		return "", false
	}
	return k.KeysIn + "/" + key, true
}

// MirrorOf is where the roll-up mirrors counter id of the kind: the app's
// document and its field; false when the kind mirrors none (or the key
// names no document).
func (k Kind) MirrorOf(id string) (path, field string, ok bool) {
	if k.Mirror == "" {
		return "", "", false
	}
	path, ok = k.KeyDocument(id)
	return path, k.Mirror, ok
}

// ours are shardcount's own top-level collections: no kind's keys are
// documents of them (a mirror would write its counts into them).
var ours = []string{dm.Counters, dm.Activity, dm.Erasures, dm.State}

// isCollectionPath: an odd number of segments, each a document id, short
// enough that its documents' names are (Firestore: 6 KiB, 100 segments;
// a key, up to a counter id, comes after).
func isCollectionPath(p string) bool {
	segments := strings.Split(p, "/")
	return len(p) <= 1024 && len(segments) < 99 && len(segments)%2 == 1 && !slices.ContainsFunc(segments, func(s string) bool { return !isDocumentID(s) })
}

// isReserved: a name Firestore keeps for itself ("__name__").
func isReserved(s string) bool {
	return len(s) >= 4 && strings.HasPrefix(s, "__") && strings.HasSuffix(s, "__")
}

// isDocumentID: what Firestore takes as a document or collection id, for
// the characters a counter id may hold.
func isDocumentID(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 1500 && !strings.Contains(s, "/") && !isReserved(s)
}

// UsersDecrement reports whether end users may decrement the kind's plain
// counters.
func (k Kind) UsersDecrement() bool { return k.Decrement == "users" }

// Offers reports whether choice is one of a choice kind's choices.
func (k Kind) Offers(choice string) bool { return slices.Contains(k.Choices, choice) }

// Mode is how the kind's counters count.
func (k Kind) Mode() Mode { return ModeOf(k.Unique, k.Choices, k.Distinct, k.JoinOnly) }

// Grows reports whether automatic sharding may grow the kind's counters
// (never a distinct kind's: Mode.Reshards).
func (k Kind) Grows() bool {
	return k.Mode().Reshards(k.Name) == nil && (k.AutoSharding == nil || *k.AutoSharding)
}

// StrongReads is how many reads a strong read of a counter of the kind
// makes beyond its document and a SUM of its shards: a choice counter's
// SUM of each choice, a distinct counter's sketch of each shard (in place
// of the SUM).
func (k Kind) StrongReads() int {
	if k.Mode() == Distinct {
		return k.Counter(k.Name + ":").NumShards
	}
	return len(k.Choices)
}

// Counting describes how the kind's counters count (Mode.Counting).
func (k Kind) Counting() string { return k.Mode().Counting(k.Choices) }
