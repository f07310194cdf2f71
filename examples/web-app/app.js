// The reference app of shardcount: a post's views and likes, counters of
// the kinds views and likes (scripts/dev.sh declares them), through
// shardcount's client (client/web) on the Firebase JS SDK: a view or a
// like is one callable, the totals and the heart live from their
// documents, the last hour's history and what is trending.
// scripts/dev.sh bundles it with esbuild and serves this directory; the
// emulators' addresses come from the page's query string (dev.sh prints
// the URL), with dev.sh's defaults.
import { initializeApp } from "firebase/app";
import { initializeAppCheck, CustomProvider, ReCaptchaEnterpriseProvider } from "firebase/app-check";
import { getAuth, connectAuthEmulator, signInAnonymously } from "firebase/auth";
import { getFirestore, connectFirestoreEmulator } from "firebase/firestore";
import { getFunctions, connectFunctionsEmulator, httpsCallable } from "firebase/functions";
import { shardcount } from "../../client/web/src/index.ts";

const params = new URLSearchParams(location.search);
const setting = (name, fallback) => params.get(name) || fallback;
const project = setting("project", "demo-shardcount");
const [fnHost, fnPort] = setting("functions", "127.0.0.1:8081").split(":");
const [fsHost, fsPort] = setting("firestore", "127.0.0.1:8080").split(":");

const app = initializeApp({ projectId: project, apiKey: "demo-api-key", authDomain: `${project}.firebaseapp.com` });
// App Check (APP_CHECK=enforce): deployed, a reCAPTCHA Enterprise site key
// proves calls come from this app; locally, a stand-in for Google's
// service mints the tokens at the URL "appcheck" names (scripts/dev.sh's
// /debug/appcheck/token). httpsCallable attaches them itself.
if (params.get("appcheck")) {
  initializeAppCheck(app, {
    provider: new CustomProvider({ getToken: async () => (await fetch(params.get("appcheck"))).json() }),
    isTokenAutoRefreshEnabled: true,
  });
} else if (params.get("recaptcha")) {
  initializeAppCheck(app, { provider: new ReCaptchaEnterpriseProvider(params.get("recaptcha")), isTokenAutoRefreshEnabled: true });
}
const auth = getAuth(app);
connectAuthEmulator(auth, `http://${setting("auth", "127.0.0.1:9099")}`, { disableWarnings: true });
// The database of FIRESTORE_DATABASE (scripts/dev.sh passes it on).
const db = getFirestore(app, setting("database", "(default)"));
connectFirestoreEmulator(db, fsHost, Number(fsPort));
const functions = getFunctions(app, setting("region", "us-central1"));
connectFunctionsEmulator(functions, fnHost, Number(fnPort));

// shardcount's client: one key per view or like, retried as the functions
// say; the functions that consume App Check tokens (APP_CHECK_CONSUME)
// take a limited-use token, fresh for each call.
const sc = shardcount({ functions, firestore: db, consume: setting("consume", "").split(",") });
const queryInstruments = httpsCallable(functions, "queryInstruments");

const $ = (id) => document.getElementById(id);

// readable turns a callable's FunctionsError into a sentence.
function readable(err) {
  const code = (err.code || "").replace(/^functions\//, "");
  const field = err.details && err.details.field ? ` (${err.details.field})` : "";
  const message = (err.message || String(err)).replace(/ \[\d+\]$/, "");
  return `${code || "error"}${field}: ${message}`;
}
function showError(err) { $("error").textContent = err ? readable(err) : ""; }

let post = "";
let unwatch = [];
let asOf = null;
let pending = 0;
const views = () => `views:${post}`;
const likes = () => `likes:${post}`;

function open(id) {
  post = id;
  for (const stop of unwatch) stop();
  $("total").textContent = $("likes").textContent = $("strong-value").textContent = $("hour-total").textContent = "–";
  $("chart").replaceChildren();
  const uid = auth.currentUser.uid;
  unwatch = [
    // The views: one document, whatever the number of shards; a post
    // nobody viewed yet has none, and counts 0.
    sc.watchCount(views(), (c) => {
      $("total").textContent = c.deleted ? "deleted" : String(c.count);
      asOf = c.asOf;
      tick();
    }, showError),
    sc.watchCount(likes(), (c) => { $("likes").textContent = c.deleted ? "deleted" : String(c.count); }, showError),
    // The heart: this user's own member document, live (the rules let each
    // user get theirs). Not the like's answer: another tab or device of
    // the same user may have changed it since.
    sc.watchLiked(likes(), uid, (liked) => {
      $("like").dataset.liked = String(liked);
      $("like").textContent = liked ? "♥ Liked" : "♡ Like";
    }, showError),
  ];
  for (const b of ["plus", "like", "strong"]) $(b).disabled = false;
  $("status").textContent = `signed in anonymously as ${uid}; post ${id}`;
  refreshHistory();
}

function tick() {
  $("age").textContent = asOf ? `as of ${((Date.now() - asOf.getTime()) / 1000).toFixed(1)} s ago` : "";
}
setInterval(tick, 250);

async function track(work) {
  pending++;
  $("pending").textContent = `${pending} in flight`;
  try {
    await work();
    showError(null);
  } catch (err) {
    showError(err);
  } finally {
    pending--;
    $("pending").textContent = pending ? `${pending} in flight` : "";
  }
}

$("open").onclick = () => { showError(null); open($("post-id").value.trim()); };
$("plus").onclick = () => track(() => sc.increment(views()));
$("like").onclick = () => track(() => sc.toggle(likes(), $("like").dataset.liked === "true"));

// The last 60 minutes of views, a bar per minute, refreshed about every cadence.
async function refreshHistory() {
  if (!post) return;
  try {
    const history = await sc.history(views(), "minute");
    const top = Math.max(1, ...history.map((h) => Math.abs(h.count)));
    const bars = history.map((h, i) => {
      const bar = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      const height = Math.round((Math.abs(h.count) / top) * 48);
      bar.setAttribute("x", String(i * 10));
      bar.setAttribute("y", String(50 - height));
      bar.setAttribute("width", "8");
      bar.setAttribute("height", String(height));
      bar.dataset.count = String(h.count);
      bar.dataset.start = h.start.toISOString();
      return bar;
    });
    $("chart").replaceChildren(...bars);
    $("hour-total").textContent = String(history.reduce((sum, h) => sum + h.count, 0));
  } catch (err) {
    showError(err);
  }
}
setInterval(refreshHistory, 2000);

// What is trending: the most viewed posts of the last 60 minutes.
async function refreshTrending() {
  if (!auth.currentUser) return;
  try {
    const ranking = await sc.top("last_hour", { kind: "views", limit: 5 });
    $("trending").replaceChildren(...ranking.counters.map((c) => {
      const item = document.createElement("li");
      item.dataset.id = c.counter_id;
      item.dataset.count = String(c.count);
      item.textContent = `${c.counter_id}: ${c.count}`;
      return item;
    }));
    // Rarely not exact: the list then holds only the posts that are sure
    // of their place, and others may rank below them.
    $("trending-inexact").hidden = ranking.exact !== false;
  } catch (err) {
    showError(err);
  }
}
setInterval(refreshTrending, 3000);
$("strong").onclick = async () => {
  try {
    const res = await sc.call("getCounter", { counter_id: views(), consistency: "strong" });
    $("strong-value").textContent = String(res.count);
    $("strong-at").textContent = `at ${res.as_of}`;
    showError(null);
  } catch (err) {
    showError(err);
  }
};

let pageToken = "";
async function loadInstruments(more) {
  try {
    const data = { field: "exchange", value: $("exchange").value.trim(), limit: 5 };
    if (more) data.page_token = pageToken;
    const res = (await queryInstruments(data)).data;
    if (!more) $("instruments").replaceChildren();
    for (const i of res.instruments) {
      const row = document.createElement("tr");
      row.dataset.id = i.id;
      for (const text of [i.timestamp, i.symbol, i.instrumentType, `${(i.price.micros / 1e6).toFixed(2)} ${i.price.currency}`]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.append(cell);
      }
      $("instruments").append(row);
    }
    pageToken = res.next_page_token || "";
    $("more").disabled = !pageToken;
    showError(null);
  } catch (err) {
    showError(err);
  }
}
$("load").onclick = () => loadInstruments(false);
$("more").onclick = () => loadInstruments(true);

signInAnonymously(auth).then(
  (cred) => {
    $("status").textContent = `signed in anonymously as ${cred.user.uid}`;
    document.body.dataset.ready = "true";
    refreshTrending();
    const id = params.get("post");
    if (id) {
      $("post-id").value = id;
      open(id);
    }
  },
  (err) => showError(err),
);
