// Command backend shows how an app's own server (a job, a Firestore
// trigger on the app's "posts") calls shardcount's functions: as a service
// identity with the custom claim admin: true, so it may create counters of
// any size and change them by any delta.
//
// The Admin SDK mints a custom token for that identity, Firebase Auth
// exchanges it for an ID token (the REST call the client SDKs make), and
// the ID token is cached until shortly before it expires: one exchange an
// hour, not one per call.
//
//	FUNCTIONS_URL=https://us-central1-my-project.cloudfunctions.net \
//	FIREBASE_API_KEY=… GOOGLE_CLOUD_PROJECT=my-project go run ./examples/backend
//
// Against the emulators, set FIREBASE_AUTH_EMULATOR_HOST (any API key
// does) and FUNCTIONS_URL to the local functions.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
)

// Caller calls the functions as one service identity.
type Caller struct {
	Functions string // base URL of the functions
	APIKey    string // the Firebase project's Web API key
	UID       string // the identity's uid, e.g. "backend:posts"
	Auth      *auth.Client

	mu      sync.Mutex
	idToken string
	expires time.Time
}

// token returns a cached ID token, minting and exchanging a custom token
// when it is missing or about to expire.
func (c *Caller) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idToken != "" && time.Now().Before(c.expires.Add(-5*time.Minute)) {
		return c.idToken, nil
	}
	custom, err := c.Auth.CustomTokenWithClaims(ctx, c.UID, map[string]any{"admin": true})
	if err != nil {
		return "", fmt.Errorf("mint a custom token: %w", err)
	}
	endpoint := "https://identitytoolkit.googleapis.com"
	if host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST"); host != "" {
		endpoint = "http://" + host + "/identitytoolkit.googleapis.com"
	}
	var out struct {
		IDToken   string `json:"idToken"`
		ExpiresIn string `json:"expiresIn"`
	}
	err = post(ctx, endpoint+"/v1/accounts:signInWithCustomToken?key="+c.APIKey, "",
		map[string]any{"token": custom, "returnSecureToken": true}, &out)
	if err != nil {
		return "", fmt.Errorf("exchange the custom token: %w", err)
	}
	seconds, _ := strconv.Atoi(out.ExpiresIn)
	c.idToken, c.expires = out.IDToken, time.Now().Add(time.Duration(seconds)*time.Second)
	return c.idToken, nil
}

// Call calls function fn with body (plain JSON) and decodes its answer.
func (c *Caller) Call(ctx context.Context, fn string, body, out any) error {
	token, err := c.token(ctx)
	if err != nil {
		return err
	}
	return post(ctx, c.Functions+"/"+fn, token, body, out)
}

func post(ctx context.Context, url, token string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("%s: %s %s: %s", url, resp.Status, e.Error.Code, e.Error.Message)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func main() {
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: os.Getenv("GOOGLE_CLOUD_PROJECT")})
	if err != nil {
		log.Fatal(err)
	}
	authClient, err := app.Auth(ctx)
	if err != nil {
		log.Fatal(err)
	}
	c := &Caller{Functions: os.Getenv("FUNCTIONS_URL"), APIKey: os.Getenv("FIREBASE_API_KEY"), UID: "backend:posts", Auth: authClient}

	// A new post gets its views counter, sized for its author's audience.
	id := fmt.Sprintf("post-%d-views", time.Now().UnixNano())
	var created struct {
		NumShards int `json:"num_shards"`
	}
	if err := c.Call(ctx, "createCounter", map[string]any{"counter_id": id, "followers_count": 2_000_000}, &created); err != nil {
		log.Fatal(err)
	}
	// A batch of views counted elsewhere, added at once.
	if err := c.Call(ctx, "incrementCounter", map[string]any{"counter_id": id, "delta": 250}, &struct{}{}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created %s with %d shards, added 250\n", id, created.NumShards)
}
