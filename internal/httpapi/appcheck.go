package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardcount/shardcount/internal/errs"
	"github.com/shardcount/shardcount/internal/logging"
	"github.com/shardcount/shardcount/internal/sizedlru"
)

// AppVerifier checks App Check tokens (internal/auth, with the Admin SDK).
type AppVerifier interface {
	// Verify returns the Firebase app id of a valid token. An invalid token
	// is an UNAUTHENTICATED error; a check that cannot be made now is
	// UNAVAILABLE.
	Verify(ctx context.Context, token string) (appID string, err error)
	// Consume marks a limited-use token used, and reports whether it had
	// been used before.
	Consume(ctx context.Context, token string) (alreadyUsed bool, err error)
}

// AppCheck is how public endpoints check the App Check token
// (X-Firebase-AppCheck) of an end user's call; admins (an app's own
// backends) are exempt.
type AppCheck struct {
	// Monitor checks, counts and logs the tokens, and refuses nothing
	// (APP_CHECK=monitor); otherwise a call without a valid one is refused
	// (enforce).
	Monitor bool
	// Consume names the endpoints whose calls must carry a limited-use
	// token, consumed on use: a replayed token is refused.
	Consume map[string]bool
	// Accounts bounds the accounts one token serves over its life, on
	// this instance (APP_CHECK_ACCOUNTS); 0 is no bound.
	Accounts int

	mu       sync.Mutex
	outcomes map[string]int64
	consumed *sizedlru.Cache[[sha256.Size]byte, struct{}] // tokens this instance saw consumed
	served   *sizedlru.Cache[[sha256.Size]byte, []uint64] // the accounts each token served, by a hash of their uid
	seed     maphash.Seed
}

// maxConsumed bounds the consumed tokens an instance remembers: a replay
// of one of them is refused without asking the App Check API. maxServed
// bounds the tokens whose accounts it remembers: a token forgotten (the
// least recently used, at about 200 bytes each) starts over, which takes
// an attacker maxServed fresh tokens. Each takes at most tokensShare of
// the instance's memory (a 64th).
const (
	maxConsumed = 100_000
	maxServed   = 100_000
	tokensShare = 1.0 / 64
)

// consumedSize and servedSize are what a remembered token takes.
func consumedSize([sha256.Size]byte, struct{}) int { return sizedlru.Entry + sha256.Size }

func servedSize(_ [sha256.Size]byte, accounts []uint64) int {
	return sizedlru.Entry + sha256.Size + 24 + 8*cap(accounts)
}

// App Check outcomes, as counted and logged.
const (
	AppCheckValid      = "valid"
	AppCheckMissing    = "missing"
	AppCheckInvalid    = "invalid"
	AppCheckReplayed   = "replayed"
	AppCheckUnverified = "unverified" // the check could not be made (503 when enforced)
	AppCheckOverused   = "overused"   // the token served APP_CHECK_ACCOUNTS other accounts (403 when enforced)
)

// Outcomes returns how many checks had each outcome so far.
func (a *AppCheck) Outcomes() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int64, len(a.outcomes))
	for k, v := range a.outcomes {
		out[k] = v
	}
	return out
}

// appCheckApplies says whether a request's App Check token is checked.
func (e *Edge) appCheckApplies(req *Request) bool {
	a := e.AppCheck
	return a != nil && !req.Admin
}

// checkApp verifies the request's App Check token, once its caller is
// known; in monitor mode it only counts and logs the outcome. A token to
// consume is consumed later (consumeApp), once the caller's budget paid
// for the call: replaying one token must not cost a call to the App Check
// API each time.
func (e *Edge) checkApp(ctx context.Context, ep Endpoint, req *Request) error {
	if !e.appCheckApplies(req) {
		return nil
	}
	a := e.AppCheck
	token := req.HTTP.Header.Get(appCheckHeader)
	outcome, appID, err := a.verify(ctx, e.Backend, token)
	if outcome == AppCheckValid {
		sum := tokenDigest(token)
		req.AppToken = hex.EncodeToString(sum[:12])
		if !a.serves(sum, req.User) {
			outcome, err = AppCheckOverused, &errs.Error{Code: errs.PermissionDenied, Field: appCheckHeader,
				Message: fmt.Sprintf("this App Check token already served %d other accounts (APP_CHECK_ACCOUNTS): an app's token serves the few accounts of one device", a.Accounts)}
		}
	}
	if outcome == AppCheckValid && a.Consume[ep.Name] {
		req.appToConsume = appID
		return nil // counted once consumed
	}
	return e.appOutcome(ctx, req, outcome, appID, err)
}

// consumeApp consumes the request's limited-use token, if it is to be.
func (e *Edge) consumeApp(ctx context.Context, req *Request) error {
	if req.appToConsume == "" {
		return nil
	}
	outcome, err := e.AppCheck.consume(ctx, e.Backend, req.HTTP.Header.Get(appCheckHeader))
	req.OneUse = outcome == AppCheckValid
	return e.appOutcome(ctx, req, outcome, req.appToConsume, err)
}

// serves reports whether the token of digest sum may serve uid: it has
// served uid before, or fewer than Accounts others. Only a call that
// passes adds its uid.
func (a *AppCheck) serves(sum [sha256.Size]byte, uid string) bool {
	if a.Accounts <= 0 || uid == "" {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.served == nil {
		a.served = sizedlru.New(maxServed, sizedlru.Share(tokensShare), servedSize)
		a.seed = maphash.MakeSeed()
	}
	account := maphash.String(a.seed, uid)
	accounts, _ := a.served.Get(sum)
	if slices.Contains(accounts, account) {
		return true
	}
	if len(accounts) >= a.Accounts {
		return false
	}
	a.served.Add(sum, append(slices.Clip(accounts), account))
	return true
}

const appCheckHeader = "X-Firebase-AppCheck"

// appOutcome counts and logs a check's outcome, and returns the error to
// answer: none in monitor mode.
func (e *Edge) appOutcome(ctx context.Context, req *Request, outcome, appID string, err error) error {
	a := e.AppCheck
	a.mu.Lock()
	if a.outcomes == nil {
		a.outcomes = map[string]int64{}
	}
	a.outcomes[outcome]++
	a.mu.Unlock()
	logging.Annotate(ctx, "app_check", outcome)
	if outcome == AppCheckValid {
		req.AppID = appID
		return nil
	}
	if a.Monitor {
		return nil
	}
	return err
}

// monitorWait bounds a check in monitor mode, which refuses nothing: a
// stall at Google (its keys, its consume API) must not spend the request's
// own deadline, whose Firestore calls would then fail.
const monitorWait = time.Second

// bounded is ctx for one check: within monitorWait in monitor mode.
func (a *AppCheck) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.Monitor {
		return context.WithTimeout(ctx, monitorWait)
	}
	return ctx, func() {}
}

func (a *AppCheck) verify(ctx context.Context, b Backend, token string) (outcome, appID string, err error) {
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	if token == "" {
		return AppCheckMissing, "", &errs.Error{Code: errs.Unauthenticated, Field: appCheckHeader,
			Message: "X-Firebase-AppCheck is missing: this function accepts calls from your apps only (App Check)"}
	}
	v, err := b.AppVerifier(ctx)
	if err != nil {
		return AppCheckUnverified, "", err
	}
	if appID, err = v.Verify(ctx, token); err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return AppCheckInvalid, "", err
		}
		return AppCheckUnverified, "", err
	}
	return AppCheckValid, appID, nil
}

func (a *AppCheck) consume(ctx context.Context, b Backend, token string) (outcome string, err error) {
	ctx, cancel := a.bounded(ctx)
	defer cancel()
	replayed := &errs.Error{Code: errs.Unauthenticated, Field: appCheckHeader,
		Message: "X-Firebase-AppCheck was used before: this function takes a limited-use token once (limitedUseAppCheckTokens)"}
	sum := tokenDigest(token)
	a.mu.Lock()
	if a.consumed == nil {
		a.consumed = sizedlru.New(maxConsumed, sizedlru.Share(tokensShare), consumedSize)
	}
	seen := a.consumed.Contains(sum)
	a.mu.Unlock()
	if seen {
		return AppCheckReplayed, replayed
	}
	v, err := b.AppVerifier(ctx)
	if err != nil {
		return AppCheckUnverified, err
	}
	used, err := v.Consume(ctx, token)
	if err != nil {
		if errs.Is(err, errs.Unauthenticated) {
			return AppCheckInvalid, err
		}
		return AppCheckUnverified, err
	}
	a.consumed.Add(sum, struct{}{})
	if used {
		return AppCheckReplayed, replayed
	}
	return AppCheckValid, nil
}

// tokenDigest identifies a token by its signed part (header.payload): the
// signature's base64 is decoded leniently, so its last character has
// spellings that all verify, and a digest of the whole string would make
// one token many.
func tokenDigest(token string) [sha256.Size]byte {
	if i := strings.LastIndexByte(token, '.'); i >= 0 {
		token = token[:i]
	}
	return sha256.Sum256([]byte(token))
}
