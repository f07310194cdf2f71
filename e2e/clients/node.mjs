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
assert.deepEqual(waits, []); // nothing was retried against dev.sh
process.exit(0);
