package sim

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	pb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/shardcount/shardcount/internal/fsevent"
	"github.com/shardcount/shardcount/internal/fsmodel"
)

// onCommit is told every commit of the model: it keeps the log, follows
// creations, turns shard writes into events as Eventarc delivers them,
// and checks the invariants that hold at every commit.
func (w *world) onCommit(at time.Time, changes []fsmodel.Change) {
	inst := -1
	if w.applying != nil {
		inst = w.applying.inst
	}
	w.commits = append(w.commits, commitRec{at: at, when: time.Now(), inst: inst, changes: changes})
	touched := map[string]bool{}
	for _, ch := range changes {
		id, coll, _ := counterOf(ch.Name)
		if id == "" {
			continue
		}
		touched[id] = true
		if coll == "" {
			w.counterReads[id] = append(w.counterReads[id], counterRead{inst, time.Now()})
		}
		if coll == "" && isLive(ch.After) && !isLive(ch.Before) {
			w.tracef("  %s created", id)
		}
	}
	w.checkPurge(changes, at)
	for _, ch := range changes {
		if _, coll, _ := counterOf(ch.Name); coll == "shards" {
			w.events++
			w.publish(fmt.Sprintf("ev%d", w.events), ch, at)
		}
	}
	for id := range touched {
		if d := shardDelta(changes, id); d != 0 {
			w.tracef("  instance %d committed %+d to %s (now %d)", inst, d, id, w.shardSum(id, time.Time{}))
		}
		w.checkAlways(id)
	}
}

// publish delivers the event of a shard's write as Eventarc does: at least
// once (twice, at times), after a delay (late by up to a minute, at
// times), to any instance, again after an answer a retry can help, with
// backoff; or, as the emulator can, never.
func (w *world) publish(id string, ch fsmodel.Change, at time.Time) {
	if w.noisy() && w.rng.Float64() < w.cfg.pDrop || w.script != nil && w.script.lose != nil && w.script.lose(ch.Name[len(root):]) {
		w.tracef("  %s lost", id)
		return
	}
	copies := 1
	if w.noisy() && w.rng.Float64() < w.cfg.pDup {
		copies = 2
	}
	for dup := range copies {
		delay := time.Duration(1+w.rng.IntN(100)) * time.Millisecond
		if w.noisy() && w.rng.Float64() < w.cfg.pLong {
			delay += time.Duration(w.rng.Int64N(int64(time.Minute)))
		}
		if w.script != nil && w.script.delay != nil {
			delay = w.script.delay(ch.Name[len(root):])
		}
		w.at(at.Add(delay), func() { w.deliver(id, dup, ch, at, 0) })
	}
}

// deliver posts the event to an instance's rollupCounter, as a
// binary-mode CloudEvent whose body is the DocumentEventData: the dup-th
// delivery of it, its attempt-th retry. Each delivery's calls are tagged
// apart: two copies may make the same calls at once.
func (w *world) deliver(id string, dup int, ch fsmodel.Change, at time.Time, attempt int) {
	data, err := fsevent.Encode(ch.After, ch.Before)
	if err != nil {
		w.problem("event %s: %v", id, err)
		return
	}
	req := httptest.NewRequestWithContext(tagged(context.Background(), fmt.Sprintf("%s.%d.%d", id, dup, attempt)), http.MethodPost, "/rollupCounter", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/protobuf")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Type", "google.cloud.firestore.document.v1.written")
	req.Header.Set("Ce-Source", "//firestore.googleapis.com/projects/"+project+"/databases/(default)")
	req.Header.Set("Ce-Id", id)
	req.Header.Set("Ce-Subject", "documents/"+ch.Name[len(root):])
	req.Header.Set("Ce-Time", at.UTC().Format(time.RFC3339Nano))
	rec := httptest.NewRecorder()
	to := w.pick()
	if w.script != nil && w.script.to != nil {
		to = w.script.to(ch.Name[len(root):])
	}
	handler := w.handler(to, "rollupCounter")
	acked := func(rec *httptest.ResponseRecorder) {
		w.tracef("  event %s (attempt %d) -> %d", id, attempt, rec.Code)
		switch {
		case rec.Code < 300:
		case rec.Code >= 500 || rec.Code == http.StatusTooManyRequests:
			if attempt < 8 { // Eventarc tries for a day; the schedule is shorter
				backoff := min(time.Second<<attempt, time.Minute)
				w.at(time.Now().Add(backoff+time.Duration(w.rng.IntN(500))*time.Millisecond), func() { w.deliver(id, dup, ch, at, attempt+1) })
			}
		default:
			w.problem("the event %s of %s was refused: %d %s", id, ch.Name[len(root):], rec.Code, rec.Body.String())
		}
	}
	f := w.instances[to].fly(func() { acked(lostAnswer()) }) // unacknowledged: delivered again
	w.d.spawn(func() { handler.ServeHTTP(rec, req) }, func() {
		if f.land() {
			acked(rec)
		}
	})
}

// counterDoc is counter id's document as of at (zero: now).
func (w *world) counterDoc(id string, at time.Time) *pb.Document {
	for _, d := range w.model.Documents(root+"counters/"+id, at) {
		if d.GetName() == root+"counters/"+id {
			return d
		}
	}
	return nil
}
