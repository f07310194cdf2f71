// Calls every public function the way apps do, through the Firebase JS SDK's
// httpsCallable, against functions served by callable_test.go, and checks
// the answers and the FunctionsError codes apps switch on. Run by
// `go test ./e2e/callable` (scripts/test.sh); it needs the npm packages of
// package-lock.json.
import assert from "node:assert/strict";
import { initializeApp } from "firebase/app";
import { getAuth, connectAuthEmulator, signInAnonymously, createUserWithEmailAndPassword, signInWithEmailAndPassword } from "firebase/auth";
import { getFunctions, connectFunctionsEmulator, httpsCallable, httpsCallableFromURL } from "firebase/functions";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test ./e2e/callable`);
  return v;
};
const project = env("PROJECT");
const functionsAddr = env("FUNCTIONS");
const [fnHost, fnPort] = functionsAddr.split(":");
const run = env("RUN");

const app = initializeApp({ projectId: project, apiKey: "demo-api-key" });
const auth = getAuth(app);
connectAuthEmulator(auth, `http://${env("AUTH_EMULATOR")}`, { disableWarnings: true });
const functions = getFunctions(app);
connectFunctionsEmulator(functions, fnHost, Number(fnPort)); // calls /{project}/us-central1/{name}
const call = (name) => httpsCallable(functions, name);
const callAt = (url) => httpsCallableFromURL(functions, url);

let checks = 0;
async function expectCode(promise, code, what, check = () => {}) {
  try {
    const res = await promise;
    assert.fail(`${what}: succeeded with ${JSON.stringify(res.data)}, want ${code}`);
  } catch (err) {
    if (err.code !== code) throw new Error(`${what}: ${err.code} "${err.message}", want ${code}`);
    check(err);
    checks++;
  }
}
async function ok(promise, what, check) {
  const res = await promise;
  check(res.data);
  checks++;
  return res.data;
}

const id = `sdk-${run}`;

// Signed out, with AUTH=required.
await expectCode(call("createCounter")({ counter_id: id }), "functions/unauthenticated", "createCounter signed out");

// An anonymous visitor may not create counters (ANONYMOUS_CREATE is off).
await signInAnonymously(auth);
await expectCode(call("createCounter")({ counter_id: id, num_shards: 3 }), "functions/permission-denied", "createCounter, anonymous",
  (err) => assert.equal(err.details.code, "PERMISSION_DENIED"));

// A signed-in user creates it and owns it.
await createUserWithEmailAndPassword(auth, `${run}@example.com`, "secret-password");
const ownerUid = auth.currentUser.uid;
await ok(call("createCounter")({ counter_id: id, num_shards: 3 }), "createCounter",
  (d) => assert.deepEqual(d, { counter_id: id, num_shards: 3 }));
await ok(call("createCounter")(), "createCounter with no argument (data null)",
  (d) => assert.equal(d.num_shards, 10));
await expectCode(call("createCounter")({ counter_id: id }), "functions/already-exists", "createCounter twice");
await expectCode(call("createCounter")({ counter_id: "x", num_shards: 0 }), "functions/invalid-argument", "num_shards 0",
  (err) => assert.equal(err.details.field, "num_shards"));
await expectCode(call("createCounter")({ counter_id: "x", num_shards: 500 }), "functions/permission-denied", "num_shards over USER_MAX_SHARDS",
  (err) => assert.equal(err.details.field, "num_shards"));
await expectCode(call("createCounter")({ Counter_ID: "x" }), "functions/invalid-argument", "a field name in the wrong case");

const key = `key-${run}`;
const first = await ok(call("incrementCounter")({ counter_id: id, delta: 2, idempotency_key: key }), "incrementCounter by its owner",
  (d) => { assert.equal(d.delta, 2); assert.equal(d.replayed, undefined); });
await ok(call("incrementCounter")({ counter_id: id, delta: 2, idempotency_key: key }), "incrementCounter, same key",
  (d) => { assert.equal(d.replayed, true); assert.equal(d.shard, first.shard); });
await expectCode(call("incrementCounter")({ counter_id: id, delta: 5, idempotency_key: key }), "functions/already-exists", "same key, another delta");
// The function's own URL, as deployed apps call it.
await ok(callAt(`http://${functionsAddr}/incrementCounter`)({ counter_id: id, action_type: "increment" }), "incrementCounter from its URL",
  (d) => assert.equal(d.delta, 1));
await ok(call("incrementCounter")({ increments: [{ counter_id: id, delta: 4 }, { counter_id: `${id}-missing` }] }), "increments",
  (d) => { assert.equal(d.results[0].status, 200); assert.equal(d.results[1].status, 404); assert.equal(d.results[1].error.code, "NOT_FOUND"); });
await expectCode(call("incrementCounter")({ counter_id: `${id}-missing` }), "functions/not-found", "an unknown counter");
await expectCode(call("incrementCounter")({ counter_id: id, delta: 0 }), "functions/invalid-argument", "delta 0",
  (err) => assert.equal(err.details.field, "delta"));

await ok(call("getCounter")({ counter_id: id, consistency: "strong" }), "getCounter strong (its parameters in data)",
  (d) => { assert.equal(d.count, 7); assert.equal(d.consistency, "strong"); });
await ok(callAt(`http://${functionsAddr}/getCounter`)({ counter_id: id }), "getCounter eventual from its URL",
  (d) => assert.equal(d.consistency, "eventual"));
await expectCode(call("getCounter")({ counter_id: id, consistency: "linear" }), "functions/invalid-argument", "a bad consistency");
// A counter past 2^53 (shards written by hand, BIG): the result carries an
// Int64Value, which the SDK decodes into a number.
await ok(call("getCounter")({ counter_id: env("BIG"), consistency: "strong" }), "a count past 2^53",
  (d) => { assert.equal(typeof d.count, "number"); assert.equal(d.count, Number(env("BIG_COUNT"))); });

await ok(call("reshardCounter")({ counter_id: id, num_shards: 2 }), "reshardCounter by its owner",
  (d) => { assert.equal(d.previous_num_shards, 3); assert.equal(d.num_shards, 2); });
await expectCode(call("reshardCounter")({ counter_id: id, num_shards: 4 }), "functions/failed-precondition", "reshard while a shrink merges");
await ok(call("resetCounter")({ counter_id: id, count: 100 }), "resetCounter by its owner",
  (d) => { assert.equal(d.count, 100); assert.ok(d.as_of); });
await ok(call("getCounter")({ counter_id: id, consistency: "strong" }), "after the reset",
  (d) => assert.equal(d.count, 100));
await ok(call("listCounters")({ limit: 100 }), "listCounters: the caller's own",
  (d) => { assert.ok(d.counters.some((c) => c.counter_id === id && c.owner === ownerUid)); assert.ok(d.counters.every((c) => c.owner === ownerUid)); });
await expectCode(call("listCounters")({ owner: "someone-else" }), "functions/permission-denied", "listCounters of another owner",
  (err) => assert.equal(err.details.field, "owner"));
await ok(call("topCounters")({ window: "all", limit: 100 }), "topCounters by total",
  (d) => { assert.equal(d.window, "all"); assert.ok(Array.isArray(d.counters)); });
await ok(call("getCounter")({ counter_id: id, history: "minute" }), "getCounter with its minute history",
  (d) => assert.equal(d.history.length, 60));

// Likes: a unique counter counts each user once.
const likes = `${id}-likes`;
await ok(call("createCounter")({ counter_id: likes, unique: true }), "createCounter unique",
  (d) => assert.equal(d.unique, true));
await ok(call("incrementCounter")({ counter_id: likes }), "like",
  (d) => { assert.equal(d.member, true); assert.equal(d.changed, true); });
await ok(call("incrementCounter")({ counter_id: likes, delta: 1 }), "like again",
  (d) => { assert.equal(d.member, true); assert.equal(d.changed, false); assert.equal(d.shard, undefined); });
await ok(call("getCounter")({ counter_id: likes, consistency: "strong" }), "did I like it?",
  (d) => { assert.equal(d.count, 1); assert.equal(d.member, true); assert.equal(d.unique, true); });
await ok(call("getCounters")({ counter_ids: [likes, `${likes}-missing`] }), "a page: did I like each?",
  (d) => { assert.equal(d.counters[0].member, true); assert.equal(d.counters[0].counter_id, likes); assert.equal(d.counters[1].error.code, "NOT_FOUND"); });
await expectCode(call("getCounters")({ counter_ids: Array.from({ length: 201 }, (_, i) => `c${i}`) }), "functions/invalid-argument", "a page of 201 counters");
await expectCode(call("incrementCounter")({ counter_id: likes, delta: 2 }), "functions/invalid-argument", "delta 2 on a unique counter",
  (err) => assert.equal(err.details.field, "delta"));
await expectCode(call("resetCounter")({ counter_id: likes }), "functions/invalid-argument", "reset of a unique counter");

// Another user, of anonymous sign-in: +1 and likes, nothing more.
const doomed = `${id}-doomed`;
await ok(call("createCounter")({ counter_id: doomed }), "a counter to delete", () => {});
await auth.signOut();
await signInAnonymously(auth);
await ok(call("incrementCounter")({ counter_id: id }), "+1 by a visitor", (d) => assert.equal(d.delta, 1));
await ok(call("incrementCounter")({ counter_id: likes }), "a visitor's like",
  (d) => { assert.equal(d.member, true); assert.equal(d.changed, true); });
await ok(call("getCounter")({ counter_id: likes, consistency: "strong" }), "two likes",
  (d) => assert.equal(d.count, 2));
await expectCode(call("incrementCounter")({ counter_id: id, delta: 5 }), "functions/permission-denied", "a visitor's +5",
  (err) => assert.equal(err.details.field, "delta"));
await expectCode(call("reshardCounter")({ counter_id: id, num_shards: 5 }), "functions/permission-denied", "a visitor's reshard");
await expectCode(call("resetCounter")({ counter_id: id }), "functions/permission-denied", "a visitor's reset");
await expectCode(call("deleteCounter")({ counter_id: doomed }), "functions/permission-denied", "a visitor's delete");

// The owner deletes it.
await auth.signOut();
await signInWithEmailAndPassword(auth, `${run}@example.com`, "secret-password");
await ok(call("deleteCounter")({ counter_id: doomed }), "deleteCounter by its owner",
  (d) => { assert.equal(d.deleted, true); assert.ok(d.reusable_after); });
await expectCode(call("getCounter")({ counter_id: doomed }), "functions/not-found", "a deleted counter");
await expectCode(call("createCounter")({ counter_id: doomed }), "functions/failed-precondition", "its id, before late writes are over",
  (err) => assert.ok(err.details.retry_after_seconds >= 1));

const exchange = `SDK${run}`;
const instrument = (i) => ({ symbol: `S${i}`, price: { currency: "USD", micros: 1000 + i }, exchange, instrumentType: "etf",
  timestamp: new Date(Date.UTC(2019, 0, 1, 0, 0, i)).toISOString() });
// Prices are the backend's (callable_test.go recorded three): a user's is 403.
await expectCode(call("recordInstruments")({ instruments: [0, 1, 2].map(instrument) }), "functions/permission-denied", "a user's recordInstruments");
const page1 = await ok(call("queryInstruments")({ field: "exchange", value: exchange, limit: 2 }), "queryInstruments",
  (d) => { assert.equal(d.instruments.length, 2); assert.ok(d.next_page_token); });
await ok(call("queryInstruments")({ field: "exchange", value: exchange, limit: 2, page_token: page1.next_page_token }), "the next page",
  (d) => { assert.equal(d.instruments.length, 1); assert.equal(d.next_page_token, undefined); });
await expectCode(call("queryInstruments")({ field: "exchange", value: exchange, page_token: "forged" }), "functions/invalid-argument", "a forged page token",
  (err) => assert.equal(err.details.field, "page_token"));

// The query budget of this user (RATE_LIMITS of callable_test.go) runs out.
let limited = false;
for (let i = 0; i < 10 && !limited; i++) {
  try {
    await call("queryInstruments")({ field: "exchange", value: exchange });
  } catch (err) {
    if (err.code !== "functions/resource-exhausted") throw err;
    assert.ok(err.details.retry_after_seconds >= 1, "retry_after_seconds");
    limited = true;
    checks++;
  }
}
assert.ok(limited, "the query budget never ran out");

// A function that cannot serve (misconfigured) answers UNAVAILABLE.
await expectCode(callAt(`${env("BROKEN")}/getCounter`)({ counter_id: id }), "functions/unavailable", "a misconfigured function");

console.log(JSON.stringify({ ok: true, checks }));
