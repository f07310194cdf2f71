// Package appcheckdev stands in for Google's App Check service locally,
// which cannot run here: it mints App Check tokens signed with a key of
// its own, serves that key as a JWKS for the Admin SDK to verify them
// with (APP_CHECK_JWKS_URL), and answers the App Check API's
// projects.verifyAppCheckToken, consuming limited-use tokens once
// (APP_CHECK_API_URL). scripts/dev.sh and the tests use it; it is never
// deployed.
package appcheckdev

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// ProjectNumber is the stand-in's project number, in tokens' issuer and
// audience.
const ProjectNumber = "123456789"

// Service is a local App Check service for one project.
type Service struct {
	Project string
	key     *rsa.PrivateKey
	kid     string

	mu   sync.Mutex
	used map[string]bool
}

// New returns a service with a fresh signing key.
func New(project string) (*Service, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Service{Project: project, key: key, kid: rand.Text()[:16], used: map[string]bool{}}, nil
}

// AppID is the Firebase app id of the stand-in's tokens.
func AppID() string { return "1:" + ProjectNumber + ":web:localdev" }

// Mint returns a token for appID valid for ttl, as the App Check SDKs get
// from Google: RS256, with the key's id, and the claims the Admin SDK
// checks.
func (s *Service) Mint(appID string, ttl time.Duration) (string, error) {
	now := time.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://firebaseappcheck.googleapis.com/" + ProjectNumber,
		"sub": appID,
		"aud": []string{"projects/" + ProjectNumber, "projects/" + s.Project},
		"iat": now.Add(-time.Second).Unix(),
		"exp": now.Add(ttl).Unix(),
		"jti": rand.Text(), // each token is another, as Google's are
	})
	t.Header["kid"] = s.kid
	return t.SignedString(s.key)
}

// JWKS serves the public key.
func (s *Service) JWKS(w http.ResponseWriter, _ *http.Request) {
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	key := map[string]string{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": s.kid,
		"n": b64(s.key.N.Bytes()), "e": b64(big.NewInt(int64(s.key.E)).Bytes())}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"keys": []any{key}})
}

// Token serves a fresh token as the JS SDK's CustomProvider wants it:
// {"token", "expireTimeMillis"}. It is how the web app gets tokens locally.
func (s *Service) Token(w http.ResponseWriter, _ *http.Request) {
	const ttl = time.Hour
	token, err := s.Mint(AppID(), ttl)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	json.NewEncoder(w).Encode(map[string]any{"token": token, "expireTimeMillis": time.Now().Add(ttl).UnixMilli()})
}

// API answers POST /v1beta/projects/{project}:verifyAppCheckToken with
// {"alreadyConsumed": true} for a token seen before; an invalid token is
// a 403, as from Google.
func (s *Service) API(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AppCheckToken string `json:"appCheckToken"`
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":verifyAppCheckToken") || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if _, err := jwt.Parse(body.AppCheckToken, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil }); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":{"code":403,"message":"invalid token","status":"PERMISSION_DENIED"}}`)
		return
	}
	s.mu.Lock()
	used := s.used[body.AppCheckToken]
	s.used[body.AppCheckToken] = true
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if used {
		fmt.Fprint(w, `{"alreadyConsumed":true}`)
		return
	}
	fmt.Fprint(w, `{}`)
}

// Consumed is how many distinct tokens the API consumed so far.
func (s *Service) Consumed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.used)
}

// Register serves the JWKS at prefix/jwks, tokens at prefix/token and the
// API under prefix/v1beta/.
func (s *Service) Register(mux *http.ServeMux, prefix string) {
	mux.HandleFunc(prefix+"/jwks", s.JWKS)
	mux.HandleFunc(prefix+"/token", s.Token)
	mux.HandleFunc(prefix+"/v1beta/", s.API)
}
