// Command backend shows how an app's own server (a job, a Firestore
// trigger on the app's "posts") calls shardcount's functions, with the
// client package: as a service identity with the custom claim admin: true,
// so it may create counters of any size and change them by any delta. The
// client keeps the identity's ID token for an hour and retries what
// shardcount's answers say a retry fixes, with the same idempotency key.
//
//	FUNCTIONS_URL=https://us-central1-my-project.cloudfunctions.net \
//	FIREBASE_API_KEY=… GOOGLE_CLOUD_PROJECT=my-project go run ./examples/backend
//
// Against the emulators, set FIREBASE_AUTH_EMULATOR_HOST (any API key
// does) and FUNCTIONS_URL to the local functions.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	firebase "firebase.google.com/go/v4"

	"github.com/shardcount/shardcount/client"
)

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
	c := client.New(os.Getenv("FUNCTIONS_URL"), os.Getenv("FIREBASE_API_KEY"), "backend:posts", authClient)

	// A new post of a famous author gets its views counter ahead of time,
	// sized for the author's audience.
	id := fmt.Sprintf("post-%d-views", time.Now().UnixNano())
	created, err := c.Create(ctx, id, &client.CreateOptions{FollowersCount: 2_000_000})
	if err != nil {
		log.Fatal(err)
	}
	// A batch of views counted elsewhere, added at once, once.
	if _, err := c.Increment(ctx, id, 250); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created %s with %d shards, added 250\n", id, created.NumShards)
}
