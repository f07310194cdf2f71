// An app's own server calling shardcount's functions, in Node: as a
// service identity with the custom claim admin: true. The Admin SDK mints
// a custom token, Firebase Auth exchanges it for an ID token, which is
// cached until shortly before it expires.
//
//   FUNCTIONS_URL=https://us-central1-my-project.cloudfunctions.net \
//   FIREBASE_API_KEY=… GOOGLE_CLOUD_PROJECT=my-project node examples/backend/backend.mjs
//
// Against the emulators, set FIREBASE_AUTH_EMULATOR_HOST (any API key
// does) and FUNCTIONS_URL to the local functions.
import { initializeApp } from "firebase-admin/app";
import { getAuth } from "firebase-admin/auth";

initializeApp({ projectId: process.env.GOOGLE_CLOUD_PROJECT });
const functions = process.env.FUNCTIONS_URL;
const apiKey = process.env.FIREBASE_API_KEY;
const identity = "backend:posts";

let cached = { idToken: "", expires: 0 };

// idToken returns a cached ID token of the identity, or a fresh one.
async function idToken() {
  if (cached.idToken && Date.now() < cached.expires - 5 * 60_000) return cached.idToken;
  const custom = await getAuth().createCustomToken(identity, { admin: true });
  const host = process.env.FIREBASE_AUTH_EMULATOR_HOST;
  const endpoint = host ? `http://${host}/identitytoolkit.googleapis.com` : "https://identitytoolkit.googleapis.com";
  const res = await fetch(`${endpoint}/v1/accounts:signInWithCustomToken?key=${apiKey}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: custom, returnSecureToken: true }),
  });
  if (!res.ok) throw new Error(`exchange the custom token: ${res.status} ${await res.text()}`);
  const out = await res.json();
  cached = { idToken: out.idToken, expires: Date.now() + Number(out.expiresIn) * 1000 };
  return cached.idToken;
}

// call calls a function with a JSON body and returns its answer.
async function call(fn, body) {
  const res = await fetch(`${functions}/${fn}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${await idToken()}` },
    body: JSON.stringify(body),
  });
  const out = await res.json();
  if (!res.ok) throw new Error(`${fn}: ${res.status} ${out.error.code}: ${out.error.message}`);
  return out;
}

// A new post gets its views counter, sized for its author's audience, and
// a batch of views counted elsewhere is added at once.
const id = `post-${Date.now()}-views`;
const created = await call("createCounter", { counter_id: id, followers_count: 2_000_000 });
await call("incrementCounter", { counter_id: id, delta: 250 });
console.log(`created ${id} with ${created.num_shards} shards, added 250`);
