// Calls every public function the way apps do, through the Firebase JS SDK's
// httpsCallable, against functions served by callable_test.go, and checks
// the answers and the FunctionsError codes apps switch on. Run by
// `go test ./e2e/callable` (scripts/test.sh); it needs the npm packages of
// package-lock.json.
import assert from "node:assert/strict";
import { initializeApp } from "firebase/app";
import { getAuth, connectAuthEmulator, signInAnonymously, createUserWithEmailAndPassword } from "firebase/auth";
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

await signInAnonymously(auth);

await ok(call("createCounter")({ counter_id: id, num_shards: 3 }), "createCounter",
  (d) => assert.deepEqual(d, { counter_id: id, num_shards: 3 }));
await ok(call("createCounter")(), "createCounter with no argument (data null)",
  (d) => assert.equal(d.num_shards, 10));
await expectCode(call("createCounter")({ counter_id: id }), "functions/already-exists", "createCounter twice");
await expectCode(call("createCounter")({ counter_id: "x", num_shards: 0 }), "functions/invalid-argument", "num_shards 0",
  (err) => assert.equal(err.details.field, "num_shards"));
await expectCode(call("createCounter")({ Counter_ID: "x" }), "functions/invalid-argument", "a field name in the wrong case");

const key = `key-${run}`;
const first = await ok(call("incrementCounter")({ counter_id: id, delta: 2, idempotency_key: key }), "incrementCounter",
  (d) => { assert.equal(d.delta, 2); assert.equal(d.replayed, undefined); });
await ok(call("incrementCounter")({ counter_id: id, delta: 2, idempotency_key: key }), "incrementCounter, same key",
  (d) => { assert.equal(d.replayed, true); assert.equal(d.shard, first.shard); });
await expectCode(call("incrementCounter")({ counter_id: id, delta: 5, idempotency_key: key }), "functions/already-exists", "same key, another delta");
// The function's own URL, as deployed apps call it.
await ok(callAt(`http://${functionsAddr}/incrementCounter`)({ counter_id: id, action_type: "increment" }), "incrementCounter from its URL",
  (d) => assert.equal(d.delta, 1));
await ok(call("incrementCounter")({ increments: [{ counter_id: id, delta: 4 }, { counter_id: `${id}-missing` }] }), "a batch",
  (d) => { assert.equal(d.results[0].status, 200); assert.equal(d.results[1].status, 404); assert.equal(d.results[1].error.code, "NOT_FOUND"); });
await expectCode(call("incrementCounter")({ counter_id: `${id}-missing` }), "functions/not-found", "an unknown counter");
await expectCode(call("incrementCounter")({ counter_id: id, delta: 0 }), "functions/invalid-argument", "delta 0",
  (err) => assert.equal(err.details.field, "delta"));

await ok(call("getCounter")({ counter_id: id, consistency: "strong" }), "getCounter strong (its parameters in data)",
  (d) => { assert.equal(d.count, 7); assert.equal(d.consistency, "strong"); });
await ok(callAt(`http://${functionsAddr}/getCounter`)({ counter_id: id }), "getCounter eventual from its URL",
  (d) => assert.equal(d.consistency, "eventual"));
await expectCode(call("getCounter")({ counter_id: id, consistency: "linear" }), "functions/invalid-argument", "a bad consistency");

// Resharding is not for anonymous sign-in.
await expectCode(call("reshardCounter")({ counter_id: id, num_shards: 5 }), "functions/permission-denied", "reshard, anonymous");
await createUserWithEmailAndPassword(auth, `${run}@example.com`, "secret-password");
await ok(call("reshardCounter")({ counter_id: id, num_shards: 2 }), "reshardCounter",
  (d) => { assert.equal(d.previous_num_shards, 3); assert.equal(d.num_shards, 2); });
await expectCode(call("reshardCounter")({ counter_id: id, num_shards: 4 }), "functions/failed-precondition", "reshard while a shrink merges");

const exchange = `SDK${run}`;
const instrument = (i) => ({ symbol: `S${i}`, price: { currency: "USD", micros: 1000 + i }, exchange, instrumentType: "etf",
  timestamp: new Date(Date.UTC(2019, 0, 1, 0, 0, i)).toISOString() });
await ok(call("recordInstruments")({ instruments: [0, 1, 2].map(instrument) }), "recordInstruments",
  (d) => assert.equal(d.ids.length, 3));
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
