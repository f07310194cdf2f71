// shardcount's web client (client/web, installed as shardcount-client) in Node with the Firebase JS SDK, against scripts/dev.sh: a user
// likes, unlikes and likes again a post nobody created, the heart and the
// count live from their documents; views and rankings. With MODE=retry the
// functions are a stand-in that answers unavailable, then
// resource-exhausted, then passes the call on: the client must wait what
// they say and send the same data (the same key) each time, retry a like
// whose answer was lost (a replay), and not retry an invalid-argument. Each check prints a line; the Go test reads them.
import assert from "node:assert/strict";
import { signInAnonymously } from "firebase/auth";
import { shardcount } from "shardcount-client";
import { env, connect } from "./connect.mjs";

const { auth, db, functions } = connect("[DEFAULT]");
const waits = [];
const sc = shardcount({ functions, firestore: db, sleep: async (ms) => { waits.push(ms); } });
const user = await signInAnonymously(auth);
const post = `post-${env("RUN")}`;

// until resolves with the first value of a listener that passes test.
function until(watch, test, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { stop(); reject(new Error(`${what}: timed out`)); }, 15000);
    const stop = watch((v) => { if (test(v)) { clearTimeout(timer); stop(); resolve(v); } }, reject);
  });
}

// poll resolves once test() holds, looked at every 50 ms.
function poll(test, what) {
  return until((f) => { const t = setInterval(() => f(), 50); return () => clearInterval(t); }, test, what);
}

if (process.env.MODE === "retry") {
  const like = await sc.like(`likes:${post}`);
  // The third attempt counted, its answer lost: the fourth is its replay.
  assert.deepEqual([like.changed, like.replayed], [true, true]);
  console.log(`retried ${JSON.stringify(waits)}, replayed`);
  try {
    await sc.increment("views:bad id");
    assert.fail("an invalid id succeeded");
  } catch (err) {
    assert.equal(err.code, "functions/invalid-argument");
    assert.equal(typeof err.key, "string");
    console.log(`not retried ${err.code}, with its key`);
  }
  process.exit(0);
}

const likes = `likes:${post}`;
await until((f, e) => sc.watchCount(likes, f, e), (c) => !c.exists && c.count === 0, "a post nobody liked reads 0");
console.log("a post nobody liked reads 0");
const first = await sc.like(likes);
assert.deepEqual([first.changed, first.member], [true, true]);
await until((f, e) => sc.watchLiked(likes, user.user.uid, f, e), (liked) => liked, "the heart after a like");
await until((f, e) => sc.watchCount(likes, f, e), (c) => c.exists && c.count === 1, "the count after a like");
console.log("liked: heart and count");
const again = await sc.like(likes);
assert.deepEqual([again.changed, again.member], [false, true]); // a second like changes nothing
await sc.unlike(likes);
await until((f, e) => sc.watchLiked(likes, user.user.uid, f, e), (liked) => !liked, "the heart after an unlike");
await until((f, e) => sc.watchCount(likes, f, e), (c) => c.count === 0, "the count after an unlike");
console.log("unliked: heart and count");
const toggled = await sc.toggle(likes, false);
assert.equal(toggled.member, true);
// "My likes": the user's member documents of the kind, newest first.
const mine = await sc.myLikes("likes", user.user.uid);
assert.equal(mine[0]?.counterId, likes);
console.log("my likes: the post, first");
// docs/guides/likes.md's recipe (clients_test.go copies it beside this
// file): the likes an author's posts received.
const { likePost, unlikePost } = await import("./recipe.mjs");
const authored = { id: `${post}-b`, author: `author-${env("RUN")}` };
const received = async () => (await sc.call("getCounter", { counter_id: `received:${authored.author}`, consistency: "strong" })).count;
await likePost(sc, authored);
await likePost(sc, authored); // changes nothing: counted once
assert.equal(await received(), 1);
await unlikePost(sc, authored);
assert.equal(await received(), 0);
await likePost(sc, authored);
assert.equal(await received(), 1);
console.log("the recipe: received likes");
for (let i = 0; i < 3; i++) await sc.increment(`views:${post}`);
await until((f, e) => sc.watchCount(`views:${post}`, f, e), (c) => c.count === 3, "three views");
const ranking = await sc.top("all", { kind: "views", limit: 100 });
assert.ok(ranking.counters.some((c) => c.counter_id === `views:${post}` && c.count === 3), JSON.stringify(ranking));
const history = await sc.history(`views:${post}`, "minute");
assert.equal(history.reduce((s, h) => s + h.count, 0), 3);
assert.ok(history[0].start instanceof Date);
console.log("views, ranking and history");
// Unique viewers (a distinct kind): a view again changes nothing, and the
// count says it is an estimate.
for (let i = 0; i < 2; i++) await sc.view(`watchers:${post}`);
await until((f, e) => sc.watchCount(`watchers:${post}`, f, e), (c) => c.count === 1 && c.estimate, "one viewer, an estimate");
const rising = await sc.top("rising", { kind: "views" });
assert.equal(rising.window, "rising");
assert.equal(typeof rising.exact, "boolean", "rising says whether it is exact");
console.log("viewers: one, an estimate; rising ranks");
// A live page whose keys repeat and include one that names no document:
// that row fails alone, its key gets no listener (one threw and stopped
// every listener after it), and the others follow their counters.
const errors = [];
const page = await until((f) => sc.watchFeed(["a/b", post, post], ["views"], {}, f, (e) => errors.push(e)),
  (rows) => rows[`views:${post}`]?.count === 3, "a live page");
assert.equal(page["views:a/b"]?.error?.code, "INVALID_ARGUMENT", JSON.stringify(page));
await sc.increment(`views:${post}`);
await until((f) => sc.watchFeed(["a/b", post, post], ["views", "views"], {}, f, (e) => errors.push(e)),
  (rows) => rows[`views:${post}`]?.count === 4, "the live page after a view");
assert.deepEqual(errors, []);
console.log("a live page: a bad key fails alone");

// A page stopped from its first onRows hears nothing more: no listener is
// attached after. A second page, whose first rows came and whose listener
// is attached after that, hears the next view after the first would have
// (the SDK calls a document's listeners in the order they were attached).
let heard = 0;
const stopFirst = sc.watchFeed([post], ["views"], {}, () => { heard++; stopFirst(); }, (e) => errors.push(e));
await poll(() => heard > 0, "the stopped page's first rows");
const witness = [];
const stopWitness = sc.watchFeed([post], ["views"], {}, (rows) => witness.push(rows[`views:${post}`]?.count), (e) => errors.push(e));
await poll(() => witness.includes(4), "the second page's first rows");
await sc.increment(`views:${post}`);
await poll(() => witness.includes(5), "the view after, on the second page");
stopWitness();
assert.equal(heard, 1, "a page stopped from its first onRows was called again");
// An onRows that throws is the page's onError: for its first rows, and
// from a listener (its first snapshot calls onRows a second time).
for (const failing of [1, 2]) {
  let calls = 0;
  let stop;
  const thrown = await new Promise((resolve) => {
    stop = sc.watchFeed([post], ["views"], {}, () => { if (++calls === failing) throw new Error(`onRows ${failing} failed`); }, resolve);
  });
  stop();
  assert.equal(thrown.message, `onRows ${failing} failed`);
}
console.log("a live page: stopped from onRows, its throw to onError");

// A live page follows its counter's deletion (the row is NOT_FOUND, as a
// feed answers it) and its creation again (the row counts from the new
// counter), as the app's backend (an admin) does both.
const backend = async (fn, body) => {
  const r = await fetch(`http://${env("FUNCTIONS")}/${fn}`, { method: "POST", body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${env("ADMIN_TOKEN")}` } });
  return { status: r.status, body: await r.json(), retryAfter: Number(r.headers.get("Retry-After") ?? 1) };
};
const gone = `views:${post}-b`;
await sc.increment(gone);
const seen = [];
const stopGone = sc.watchFeed([`${post}-b`], ["views"], {}, (rows) => seen.push(rows[gone]), (e) => errors.push(e));
const latest = (test, what) => poll(() => seen.length > 0 && test(seen.at(-1)), what);
await latest((r) => r.count === 1 && !r.error, "the page before the deletion");
const del = await backend("deleteCounter", { counter_id: gone });
assert.equal(del.status, 200, JSON.stringify(del.body));
await latest((r) => r.error?.code === "NOT_FOUND" && r.count === 0, "the row of a deleted counter");
// The id is free again after reusable_after; until its purge ends, a
// creation answers 409 or 503 with the time to wait.
await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(del.body.reusable_after) - Date.now())));
for (let made = await backend("createCounter", { counter_id: gone }), tries = 1; made.status !== 201; made = await backend("createCounter", { counter_id: gone }), tries++) {
  assert.ok([409, 503].includes(made.status) && tries < 30, JSON.stringify(made.body));
  await new Promise((r) => setTimeout(r, made.retryAfter * 1000));
}
await sc.increment(gone);
await latest((r) => r.count === 1 && !r.error, "the row of the counter made again");
stopGone();
assert.deepEqual(errors, []);
console.log("a live page: deleted, then made again");
assert.deepEqual(waits, []); // nothing was retried against dev.sh
process.exit(0);
