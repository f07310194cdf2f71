// Package functions holds the Cloud Functions of the project: their catalog
// (names, triggers, who may call them) and their handlers, built lazily from
// the environment on the first request.
//
// The module root registers every entry of Catalog with functions-framework;
// scripts/deploy.sh deploys each one under the same name.
package functions

import "net/http"

// Kind is how a function is triggered.
type Kind int

const (
	HTTPTrigger Kind = iota
	FirestoreTrigger
)

// Access says who may invoke a function.
type Access int

const (
	// Public functions are called by apps over HTTPS; they check Firebase
	// ID tokens themselves (AUTH=required).
	Public Access = iota
	// Private functions are invoked only by Google services with IAM
	// (Eventarc, Cloud Scheduler); they are deployed without public access.
	Private
)

// Spec describes one function.
type Spec struct {
	Name   string
	Kind   Kind
	Access Access
	Method string // HTTP functions
	// Firestore triggers: the event type and the document path pattern.
	EventType string
	Document  string
}

// Roll-up trigger of the counters data model.
const (
	WrittenEvent  = "google.cloud.firestore.document.v1.written"
	ShardDocument = "counters/{counterId}/shards/{shardId}"
)

// Catalog lists every function, in deployment order.
var Catalog = []Spec{
	{Name: "createCounter", Kind: HTTPTrigger, Access: Public, Method: http.MethodPost},
	{Name: "incrementCounter", Kind: HTTPTrigger, Access: Public, Method: http.MethodPost},
	{Name: "getCounter", Kind: HTTPTrigger, Access: Public, Method: http.MethodGet},
	{Name: "rollupCounter", Kind: FirestoreTrigger, Access: Private, EventType: WrittenEvent, Document: ShardDocument},
	{Name: "reconcileCounters", Kind: HTTPTrigger, Access: Private, Method: http.MethodPost},
	{Name: "recordInstruments", Kind: HTTPTrigger, Access: Public, Method: http.MethodPost},
	{Name: "queryInstruments", Kind: HTTPTrigger, Access: Public, Method: http.MethodGet},
}
