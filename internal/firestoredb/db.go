package firestoredb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	vkit "cloud.google.com/go/firestore/apiv1"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// DB holds the Firestore access of one process.
type DB struct {
	api Firestore
	// client builds queries and document names, and serves the
	// instruments example's queries (Snapshots).
	client *firestore.Client
	// database is "projects/P/databases/D".
	database string
	closers  []func() error

	statsMu sync.Mutex
	stats   map[string]*Ops
}

// DefaultDatabase is Firestore's (default) database.
const DefaultDatabase = "(default)"

// Open connects to database (DefaultDatabase, or a named one) of Firestore.
// projectID may be empty to detect it from the runtime credentials. With
// emulatorHost set (FIRESTORE_EMULATOR_HOST), both clients talk to the
// emulator as an owner, bypassing security rules.
func Open(ctx context.Context, projectID, database, emulatorHost string) (*DB, error) {
	if projectID == "" {
		projectID = firestore.DetectProjectID
	}
	opts := []option.ClientOption{option.WithGRPCDialOption(reconnect)}
	if emulatorHost != "" {
		// Both clients on this connection, whatever the process's own
		// FIRESTORE_EMULATOR_HOST says.
		conn, err := grpc.NewClient("passthrough:///"+emulatorHost, reconnect,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(ownerCredentials{}))
		if err != nil {
			return nil, fmt.Errorf("firestoredb: dial emulator %s: %w", emulatorHost, err)
		}
		opts = []option.ClientOption{option.WithGRPCConn(conn), option.WithoutAuthentication()}
	}
	client, err := firestore.NewClientWithDatabase(ctx, projectID, database, opts...)
	if err != nil {
		return nil, fmt.Errorf("firestoredb: open client: %w", err)
	}
	raw, err := vkit.NewClient(ctx, opts...)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("firestoredb: open raw client: %w", err)
	}
	db := newDB(client, func(database string) Firestore { return grpcFirestore{raw: raw, database: database} })
	db.closers = []func() error{client.Close, raw.Close}
	return db, nil
}

// OnAPI returns a DB of database of projectID served by api, with no
// network: the simulation's, on the model of internal/fsmodel.
func OnAPI(api Firestore, projectID, database string) (*DB, error) {
	if host := os.Getenv("FIRESTORE_EMULATOR_HOST"); host != "" {
		// The firestore package would dial it at once, though the client
		// only builds queries here: a model must never reach a real
		// Firestore (and a simulation's clock stalls on a goroutine that
		// waits on the network).
		return nil, fmt.Errorf("firestoredb: FIRESTORE_EMULATOR_HOST=%s is set: a DB on a model of Firestore would dial it; unset it", host)
	}
	// A client that never dials: it only builds queries and names.
	conn, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	client, err := firestore.NewClientWithDatabase(context.Background(), projectID, database, option.WithGRPCConn(conn), option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	db := newDB(client, func(string) Firestore { return api })
	db.closers = []func() error{client.Close}
	return db, nil
}

func newDB(client *firestore.Client, api func(database string) Firestore) *DB {
	database := dbPath(client.Collection("_").Path)
	return &DB{api: api(database), client: client, database: database, stats: map[string]*Ops{}}
}

// ProjectID returns the project the clients work in.
func (db *DB) ProjectID() string {
	// database is "projects/P/databases/D".
	p, _, _ := strings.Cut(strings.TrimPrefix(db.database, "projects/"), "/")
	return p
}

// Database returns the database's id.
func (db *DB) Database() string { return db.database[strings.LastIndex(db.database, "/")+1:] }

// Close releases the clients.
func (db *DB) Close() error {
	var errList []error
	for _, c := range db.closers {
		errList = append(errList, c())
	}
	return errors.Join(errList...)
}

// Name returns the full name of the document at path ("counters/c1").
func (db *DB) Name(path string) string { return db.database + "/documents/" + path }

// Path is the path of the document of full name name (Name's inverse).
func (db *DB) Path(name string) string { return strings.TrimPrefix(name, db.database+"/documents/") }

// Doc returns the document at path, for a query's cursor.
func (db *DB) Doc(path string) *firestore.DocumentRef { return db.client.Doc(path) }

// Collection returns the collection at path, to build queries on.
func (db *DB) Collection(path string) *firestore.CollectionRef { return db.client.Collection(path) }

// CollectionGroup returns the collection group id, to build queries on.
func (db *DB) CollectionGroup(id string) *firestore.CollectionGroupRef {
	return db.client.CollectionGroup(id)
}

// reconnect caps gRPC's reconnection backoff at 5 s (its default grows to
// 120 s): after Firestore comes back, a function serves again within
// seconds, without a restart. Calls made while it is away fail at once, and
// the function answers 503.
var reconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// ownerCredentials is how the emulator recognises an admin (rules bypassed),
// the same header the firestore package sends to the emulator.
type ownerCredentials struct{}

func (ownerCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerCredentials) RequireTransportSecurity() bool { return false }

// noRetry turns off the generated client's automatic retry of Commit (on
// UNAVAILABLE and RESOURCE_EXHAUSTED): a commit whose answer was lost may
// have been applied, and sending it again would apply an unkeyed increment
// twice. Callers decide what a failed commit means.
var noRetry = gax.WithRetry(func() gax.Retryer { return nil })

// dbPath returns "projects/P/databases/D" of a full document or collection
// path "projects/P/databases/D/documents/...".
func dbPath(p string) string {
	for i, n := 0, 0; i < len(p); i++ {
		if p[i] == '/' {
			if n++; n == 4 {
				return p[:i]
			}
		}
	}
	return p
}
