// The reference client of shardcount: the Firebase JS SDK against the
// functions' callable protocol, a realtime listener on the roll-up, a like
// button on a unique counter (its state live from the user's member
// document), the last hour's history and what is trending.
// scripts/dev.sh bundles it with esbuild and serves this directory; the
// emulators' addresses come from the page's query string (dev.sh prints
// the URL), with dev.sh's defaults.
import { initializeApp } from "firebase/app";
import { initializeAppCheck, CustomProvider, ReCaptchaEnterpriseProvider } from "firebase/app-check";
import { getAuth, connectAuthEmulator, signInAnonymously } from "firebase/auth";
import { getFirestore, connectFirestoreEmulator, doc, onSnapshot } from "firebase/firestore";
import { getFunctions, connectFunctionsEmulator, httpsCallable } from "firebase/functions";

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
const db = getFirestore(app);
connectFirestoreEmulator(db, fsHost, Number(fsPort));
const functions = getFunctions(app, setting("region", "us-central1"));
connectFunctionsEmulator(functions, fnHost, Number(fnPort));

// The functions that consume App Check tokens (APP_CHECK_CONSUME) take a
// limited-use token, fresh for each call.
const consumed = setting("consume", "").split(",");
const callable = (name) => httpsCallable(functions, name, { limitedUseAppCheckTokens: consumed.includes(name) });
const createCounter = callable("createCounter");
const incrementCounter = callable("incrementCounter");
const getCounter = callable("getCounter");
const topCounters = callable("topCounters");
const queryInstruments = callable("queryInstruments");

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// readable turns a callable's FunctionsError into a sentence.
function readable(err) {
  const code = (err.code || "").replace(/^functions\//, "");
  const field = err.details && err.details.field ? ` (${err.details.field})` : "";
  const message = (err.message || String(err)).replace(/ \[\d+\]$/, "");
  return `${code || "error"}${field}: ${message}`;
}
function showError(err) { $("error").textContent = err ? readable(err) : ""; }

// callWithRetry retries what a retry can fix: UNAVAILABLE, and
// RESOURCE_EXHAUSTED after the wait the function asks for. The same data
// goes every time, so an increment's idempotency key makes it count once.
async function callWithRetry(fn, data) {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await fn(data)).data;
    } catch (err) {
      const retryable = err.code === "functions/unavailable" || err.code === "functions/resource-exhausted";
      if (!retryable || attempt >= 8) throw err;
      const wait = err.details && err.details.retry_after_seconds ? err.details.retry_after_seconds * 1000 : 200 * attempt;
      await sleep(wait);
    }
  }
}

let counterId = "";
let unsubscribe = null;
let unsubscribeMember = null;
let asOf = null;
let pending = 0;

async function open(id) {
  counterId = id;
  if (unsubscribe) unsubscribe();
  if (unsubscribeMember) unsubscribeMember();
  unsubscribeMember = null;
  $("total").textContent = "–";
  $("strong-value").textContent = "–";
  $("chart").replaceChildren();
  $("hour-total").textContent = "–";
  // The roll-up: one document, whatever the number of shards.
  unsubscribe = onSnapshot(doc(db, "counters", id), (snap) => {
    if (!snap.exists()) {
      showError({ code: "not-found", message: `counter "${id}" does not exist` });
      return;
    }
    $("total").textContent = String(snap.get("count"));
    asOf = snap.get("rollup_as_of") ? snap.get("rollup_as_of").toDate() : null;
    tick();
  }, showError);
  let unique = false;
  try {
    unique = (await callWithRetry(getCounter, { counter_id: id })).unique === true;
  } catch (err) {
    showError(err);
  }
  $("plus").hidden = $("minus").hidden = unique;
  $("like").hidden = !unique;
  if (unique) {
    // Did I like it? The user's own member document, live: the rules let
    // each user get theirs and nobody else's.
    unsubscribeMember = onSnapshot(doc(db, "counters", id, "members", auth.currentUser.uid), (snap) => {
      $("like").dataset.liked = String(snap.exists());
      $("like").textContent = snap.exists() ? "♥ Liked" : "♡ Like";
    }, showError);
  }
  for (const b of ["plus", "minus", "like", "strong"]) $(b).disabled = false;
  $("status").textContent = `signed in anonymously as ${auth.currentUser.uid}; counter ${id}${unique ? " (unique)" : ""}`;
  refreshHistory();
}

function tick() {
  $("age").textContent = asOf ? `as of ${((Date.now() - asOf.getTime()) / 1000).toFixed(1)} s ago` : "";
}
setInterval(tick, 250);

async function increment(delta) {
  pending++;
  $("pending").textContent = `${pending} in flight`;
  try {
    // One key per press: a retry of this press cannot count twice.
    await callWithRetry(incrementCounter, { counter_id: counterId, delta, idempotency_key: crypto.randomUUID() });
    showError(null);
  } catch (err) {
    showError(err);
  } finally {
    pending--;
    $("pending").textContent = pending ? `${pending} in flight` : "";
  }
}

$("open").onclick = () => { showError(null); open($("counter-id").value.trim()); };
$("create").onclick = async () => {
  showError(null);
  const id = $("counter-id").value.trim();
  try {
    const data = { num_shards: 10, unique: $("unique").checked };
    if (id) data.counter_id = id;
    const res = await callWithRetry(createCounter, data);
    $("counter-id").value = res.counter_id;
    open(res.counter_id);
  } catch (err) {
    showError(err);
  }
};
$("plus").onclick = () => increment(1);
$("minus").onclick = () => increment(-1);
// One callable toggles the like: +1 adds this user, −1 removes them.
$("like").onclick = () => increment($("like").dataset.liked === "true" ? -1 : 1);

// The last 60 minutes, a bar per minute, refreshed about every cadence.
async function refreshHistory() {
  if (!counterId) return;
  try {
    const res = await getCounter({ counter_id: counterId, history: "minute" });
    const history = res.data.history || [];
    const top = Math.max(1, ...history.map((h) => Math.abs(h.count)));
    const bars = history.map((h, i) => {
      const bar = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      const height = Math.round((Math.abs(h.count) / top) * 48);
      bar.setAttribute("x", String(i * 10));
      bar.setAttribute("y", String(50 - height));
      bar.setAttribute("width", "8");
      bar.setAttribute("height", String(height));
      bar.dataset.count = String(h.count);
      bar.dataset.start = h.start;
      return bar;
    });
    $("chart").replaceChildren(...bars);
    $("hour-total").textContent = String(history.reduce((sum, h) => sum + h.count, 0));
  } catch (err) {
    showError(err);
  }
}
setInterval(refreshHistory, 2000);

// What is trending: the counters with the most counted this hour.
async function refreshTrending() {
  if (!auth.currentUser) return;
  try {
    const res = await topCounters({ window: "hour", limit: 5 });
    $("trending").replaceChildren(...res.data.counters.map((c) => {
      const item = document.createElement("li");
      item.dataset.id = c.counter_id;
      item.dataset.count = String(c.count);
      item.textContent = `${c.counter_id}: ${c.count}`;
      return item;
    }));
  } catch (err) {
    showError(err);
  }
}
setInterval(refreshTrending, 3000);
$("strong").onclick = async () => {
  try {
    const res = await callWithRetry(getCounter, { counter_id: counterId, consistency: "strong" });
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
    const res = await callWithRetry(queryInstruments, data);
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
    const id = params.get("counter");
    if (id) {
      $("counter-id").value = id;
      open(id);
    }
  },
  (err) => showError(err),
);
