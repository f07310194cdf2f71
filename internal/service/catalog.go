// Package service holds the Cloud Functions of the project: their catalog
// (names, triggers, who may call them, their handlers), and the wiring of
// each handler: the edge (internal/httpapi) decodes a request, the core
// (internal/core, internal/reconcile) serves it over the stores
// (internal/store/...), all built lazily from the environment on the
// first request.
//
// The module root registers every entry of Catalog with functions-framework;
// scripts/deploy.sh deploys each one under the same name.
package service

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/shardcount/shardcount/internal/core"
	"github.com/shardcount/shardcount/internal/datamodel"
	"github.com/shardcount/shardcount/internal/reconcile"
	"github.com/shardcount/shardcount/internal/wire"
)

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
	// ID tokens themselves (AUTH=required) and speak the callable protocol.
	Public Access = iota
	// Private functions are invoked only by Google services with IAM
	// (Eventarc, Cloud Scheduler); they are deployed without public access.
	Private
)

// Group is a feature: what scripts/deploy.sh --only deploys together.
type Group string

const (
	// Counters are the sharded counters, their roll-up and their
	// lifecycle.
	Counters Group = "counters"
	// Instruments are the sharded-timestamps example.
	Instruments Group = "instruments"
)

// Groups lists the groups in deployment order.
var Groups = []Group{Counters, Instruments}

// GroupOf is the group whose functions use a collection group (of the
// indexes and rules): the instruments example's, or the counters'.
func GroupOf(collection string) Group {
	if collection == datamodel.Instruments {
		return Instruments
	}
	return Counters
}

// ParseGroups reads a comma-separated list of groups; empty: all of them.
func ParseGroups(s string) ([]Group, error) {
	if strings.TrimSpace(s) == "" {
		return Groups, nil
	}
	var out []Group
	for name := range strings.SplitSeq(s, ",") {
		g := Group(strings.TrimSpace(name))
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("%q is not a group (%v)", name, Groups)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// Spec describes one function.
type Spec struct {
	Name   string
	Group  Group
	Kind   Kind
	Access Access
	Method string // HTTP functions
	// SignsPageTokens functions need PAGE_TOKEN_SECRET when deployed.
	SignsPageTokens bool
	// MaxBody bounds an HTTP function's request body.
	MaxBody int64
	// LongRunning functions get RECONCILE_BUDGET instead of
	// FIRESTORE_DEADLINE, and a longer timeout when deployed.
	LongRunning bool
	// Firestore triggers: the event type and the document path pattern.
	EventType string
	Document  string

	http  endpoint
	event func(*app, context.Context, event.Event) error
}

// WrittenEvent is the Firestore event the roll-up listens to.
const WrittenEvent = "google.cloud.firestore.document.v1.written"

// Body limits.
const (
	smallBody = 64 << 10
	largeBody = 1 << 20 // 500 instruments, or 500 increments, with long names
)

// Catalog lists every function, in deployment order.
var Catalog = []Spec{
	{Name: "createCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).CreateCounter, http.StatusCreated)},
	{Name: "incrementCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: largeBody, http: endpoint{handle: incrementCounter, in: reflect.TypeFor[wire.IncrementCounterRequest](),
		out: []reflect.Type{reflect.TypeFor[wire.IncrementCounterResponse](), reflect.TypeFor[IncrementListResponse]()}}},
	{Name: "getCounters", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: endpoint{handle: getCounters,
		in: reflect.TypeFor[wire.GetCountersRequest](), out: []reflect.Type{reflect.TypeFor[GetCountersResponse]()}}},
	{Name: "getCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodGet, MaxBody: smallBody, http: call((*core.Core).GetCounter, http.StatusOK)},
	{Name: "reshardCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).ReshardCounter, http.StatusOK)},
	{Name: "resetCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).ResetCounter, http.StatusOK)},
	{Name: "deleteCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).DeleteCounter, http.StatusOK)},
	{Name: "updateCounter", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).UpdateCounter, http.StatusOK)},
	{Name: "listCounters", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodGet, MaxBody: smallBody, http: call((*core.Core).ListCounters, http.StatusOK)},
	{Name: "listMembers", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodGet, MaxBody: smallBody, http: call((*core.Core).ListMembers, http.StatusOK)},
	{Name: "eraseMember", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: smallBody, http: call((*core.Core).EraseMember, http.StatusOK)},
	{Name: "topCounters", Group: Counters, Kind: HTTPTrigger, Access: Public, Method: http.MethodGet, MaxBody: smallBody, http: call((*core.Core).TopCounters, http.StatusOK)},
	{Name: "rollupCounter", Group: Counters, Kind: FirestoreTrigger, Access: Private, EventType: WrittenEvent, Document: datamodel.ShardDocument, event: (*app).rollupCounter},
	{Name: "reconcileCounters", Group: Counters, Kind: HTTPTrigger, Access: Private, Method: http.MethodPost, MaxBody: smallBody, LongRunning: true, http: endpoint{handle: reconcileCounters,
		in: reflect.TypeFor[reconcile.ReconcileRequest](), out: []reflect.Type{reflect.TypeFor[reconcile.ReconcileResponse]()}}},
	{Name: "recordInstruments", Group: Instruments, Kind: HTTPTrigger, Access: Public, Method: http.MethodPost, MaxBody: largeBody, http: call((*core.Core).RecordInstruments, http.StatusCreated)},
	{Name: "queryInstruments", Group: Instruments, Kind: HTTPTrigger, Access: Public, Method: http.MethodGet, MaxBody: smallBody, SignsPageTokens: true, http: call((*core.Core).QueryInstruments, http.StatusOK)},
}

// specs are the catalog's entries by name.
var specs = func() map[string]Spec {
	out := map[string]Spec{}
	for _, s := range Catalog {
		out[s.Name] = s
	}
	return out
}()

// SignsPageTokens names the functions of specs that sign page tokens,
// which need PAGE_TOKEN_SECRET when deployed.
func SignsPageTokens(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		if s.SignsPageTokens {
			out = append(out, s.Name)
		}
	}
	return out
}

// GroupNames returns the names of groups, for the rules' sections.
func GroupNames(groups []Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = string(g)
	}
	return out
}

// Uses returns whether one of groups uses a collection group.
func Uses(groups []Group) func(collection string) bool {
	return func(collection string) bool { return slices.Contains(groups, GroupOf(collection)) }
}
