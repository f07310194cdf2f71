// What node.mjs and scenario.mjs share: their settings, and an app
// instance on the test's emulators and functions, as one device opens it.
import { initializeApp } from "firebase/app";
import { getAuth, connectAuthEmulator } from "firebase/auth";
import { getFirestore, connectFirestoreEmulator } from "firebase/firestore";
import { getFunctions, connectFunctionsEmulator } from "firebase/functions";

// env is a setting the Go test passes.
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test ./e2e/clients`);
  return v;
}

// connect opens an app instance named name: its own Auth, Firestore and
// functions, each on the test's.
export function connect(name) {
  const app = initializeApp({ projectId: env("PROJECT"), apiKey: "demo-api-key" }, name);
  const auth = getAuth(app);
  connectAuthEmulator(auth, `http://${env("AUTH_EMULATOR")}`, { disableWarnings: true });
  const db = getFirestore(app);
  const [fsHost, fsPort] = env("FIRESTORE").split(":");
  connectFirestoreEmulator(db, fsHost, Number(fsPort));
  const functions = getFunctions(app);
  const [fnHost, fnPort] = env("FUNCTIONS").split(":");
  connectFunctionsEmulator(functions, fnHost, Number(fnPort));
  return { auth, db, functions };
}
