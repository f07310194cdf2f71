// shardcount's client for web apps and Node, on the Firebase JS SDK: the
// counters' functions through httpsCallable, their documents through
// Firestore listeners. It sends each increment or like with an idempotency
// key of its own and retries it, with the same key, when shardcount says a
// retry helps (unavailable, resource-exhausted: after the wait it names)
// and when its outcome is unknown (the connection failed, the call timed
// out or a gateway gave up: internal, deadline-exceeded, unknown), and
// never otherwise, so each counts once. Other calls are retried only when
// shardcount says so. A change that still fails throws with its key
// (err.key): pass it back ({ key }) to try again later.
//
//   import { shardcount } from "shardcount-client";
//   const sc = shardcount({ functions: getFunctions(app), firestore: getFirestore(app) });
//   await sc.like("likes:post-1");
//   sc.watchCount("likes:post-1", ({ count }) => render(count));
//   sc.watchLiked("likes:post-1", uid, (liked) => heart(liked));
//   await sc.react("reactions:post-1", "love");
//   sc.watchCounts("reactions:post-1", ({ counts }) => render(counts));

import { httpsCallable, type Functions, type FunctionsError } from "firebase/functions";
import {
  collectionGroup, doc, getDocs, limit, onSnapshot, orderBy, query, startAfter, where,
  type DocumentData, type DocumentSnapshot, type Firestore, type QueryDocumentSnapshot, type Unsubscribe,
} from "firebase/firestore";
import type * as wire from "./wire";

export interface ShardcountOptions {
  functions: Functions;
  firestore: Firestore;
  /** Functions whose calls carry a limited-use App Check token (the server's APP_CHECK_CONSUME). */
  consume?: string[];
  /** Attempts of one call, its retries included (default 8). */
  maxAttempts?: number;
  /** Most time one call spends waiting between attempts (default 30 s). */
  maxWaitMs?: number;
  /** How to wait between attempts (tests record the waits). */
  sleep?: (ms: number) => Promise<void>;
}

/** An increment's answer. */
export interface Increment {
  counterId: string;
  delta: number;
  /** The key had been used: the first answer, nothing counted again. */
  replayed: boolean;
  /** The idempotency key it was sent with: a follow-up derives its own from it. */
  key: string;
}

/**
 * A like's or unlike's answer. Draw the heart from watchLiked, not from
 * this: a replayed answer tells the first outcome, and another device of
 * the same user may have changed it since.
 */
export interface Like {
  counterId: string;
  member: boolean;
  changed: boolean;
  replayed: boolean;
  /** The idempotency key it was sent with. */
  key: string;
}

/**
 * A reaction's answer (a choice kind's counter). Draw the user's reaction
 * from watchReaction, for the reason Like gives.
 */
export interface Reaction {
  counterId: string;
  /** The user's choice after this call, and before it ("": none). */
  choice: string;
  previous: string;
  changed: boolean;
  replayed: boolean;
  /** The idempotency key it was sent with. */
  key: string;
}

/** A choice counter as its document says, live: count is the people with a choice. */
export interface CountsSnapshot extends CountSnapshot {
  /** Each choice's count; {} before the counter's first roll-up. */
  counts: Record<string, number>;
}

/** A counter as its document says, live. */
export interface CountSnapshot {
  count: number;
  /** The roll-up's time; null before its first roll-up (or before the counter exists). */
  asOf: Date | null;
  /** Its document exists: a counter of a kind exists from its first use. */
  exists: boolean;
  /** It was deleted: render it as gone, not as 0. */
  deleted: boolean;
  /** count is a distinct counter's estimate (about 0.8%): render it as such ("about 1.2M"). */
  estimate: boolean;
}

export type Granularity = "minute" | "hour" | "day";
export type Window = Granularity | "last_hour" | "last_day" | "all" | "rising";

/** topCounters' answer (wire.TopCountersResponse, its window one of Window). */
export interface Ranking extends wire.TopCountersResponse {
  window: Window;
  /**
   * For a rolling window: no other counter can rank among these. When
   * false (rare), `counters` holds only those sure of their place, highest
   * first, and others may rank below them: show it as such. For
   * "rising": no counter left out can score above the last listed (often
   * false on a busy app: the list is then the best of those scored).
   */
  exact?: boolean;
  /** Of window "rising": what it scored with. */
  rising?: wire.RisingParameters;
  /** Of "rising": count is the last 60 minutes', baseline_per_hour the mean per hour before, score how far above it. */
  counters: wire.RankedCounter[];
}

/**
 * A counter of a feed's page, as getCounters answers it: the roll-up's
 * count (at most FEED_CACHE older than asOf says), and what its kind tells
 * the reader: their like (member), their reaction (choice, "" for none)
 * and each reaction's count (counts), whether it is an estimate. A counter
 * of a kind nobody used is 0. A row that failed has error, and count 0.
 */
export interface FeedRow {
  counterId: string;
  count: number;
  asOf: Date | null;
  member?: boolean;
  choice?: string;
  counts?: Record<string, number>;
  estimate: boolean;
  error?: { code: string; message: string };
}

/** Where a kind mirrors its counts into the app's documents (COUNTER_KINDS' keys_in and mirror). */
export interface Mirror {
  collection: string;
  field: string;
}

/** One of a user's memberships ("my likes"), newest first. */
export interface Liked {
  counterId: string;
  joinedAt: Date | null;
  /** Pass as `after` for the next page. */
  cursor: QueryDocumentSnapshot;
}

export interface Shardcount {
  /** Adds delta (default 1) once; key: the idempotency key (default a fresh one). */
  increment(counterId: string, delta?: number, options?: { key?: string }): Promise<Increment>;
  like(counterId: string, options?: { key?: string }): Promise<Like>;
  unlike(counterId: string, options?: { key?: string }): Promise<Like>;
  /** Likes when liked is false, unlikes when it is true. */
  toggle(counterId: string, liked: boolean, options?: { key?: string }): Promise<Like>;
  watchCount(counterId: string, onCount: (c: CountSnapshot) => void, onError?: (e: Error) => void): Unsubscribe;
  watchLiked(counterId: string, uid: string, onLiked: (liked: boolean) => void, onError?: (e: Error) => void): Unsubscribe;
  /** Adds the signed-in user to a distinct kind's counter (unique viewers): again changes nothing. */
  view(counterId: string): Promise<Increment>;
  /** Sets the user's choice on a choice kind's counter, in place of any other; "" removes it. */
  react(counterId: string, choice: string, options?: { key?: string }): Promise<Reaction>;
  /** The user's choice, live: "" when they have none. uid: the signed-in user (the rules allow no other). */
  watchReaction(counterId: string, uid: string, onChoice: (choice: string) => void, onError?: (e: Error) => void): Unsubscribe;
  /** A choice counter's count and counts, live. */
  watchCounts(counterId: string, onCounts: (c: CountsSnapshot) => void, onError?: (e: Error) => void): Unsubscribe;
  /** The counters of kind that user uid (the signed-in user: the rules allow no other) is a member of, newest first. */
  myLikes(kind: string, uid: string, options?: { limit?: number; after?: Liked }): Promise<Liked[]>;
  /** A counter's buckets; counts: a choice counter's change of each choice in the bucket. */
  history(counterId: string, granularity: Granularity, range?: { from?: Date; to?: Date }): Promise<{ start: Date; count: number; counts?: Record<string, number> }[]>;
  top(window: Window, options?: { kind?: string; limit?: number; previous?: boolean; choice?: string }): Promise<Ranking>;
  /**
   * A feed's page in one call: every kind of every key (at most 200
   * counters), by counter id ("likes:post-1"), with the reader's own like
   * and reaction of each.
   */
  feed(keys: string[], kinds: string[]): Promise<Record<string, FeedRow>>;
  /** The counters of ids in one call (at most 200), by id. */
  counters(counterIds: string[]): Promise<Record<string, FeedRow>>;
  /**
   * A feed's page, live with the fewest listeners: the page once (feed),
   * then its counts from the app's own documents where a kind mirrors
   * them (mirrors, by kind: one listener a document, whatever its kinds),
   * and from the counters' documents for the others (duplicates once; no
   * listener for a row that failed, and a path the SDK refuses is
   * onError's). A counter of a kind that mirrors nothing, deleted while
   * watched, becomes its row's error (NOT_FOUND), as feed answers it; a
   * mirrored kind shows the mirror's last count. The reader's own like
   * and reaction are the page's: call feed again to see another device's.
   */
  watchFeed(keys: string[], kinds: string[], mirrors: Record<string, Mirror>, onRows: (rows: Record<string, FeedRow>) => void, onError?: (e: Error) => void): Unsubscribe;
  /** Any function, with the same retry rule. */
  call<T>(name: string, data: object): Promise<T>;
}

/** A change that failed, with the key to retry it with. */
export type ChangeError = FunctionsError & { key: string };

/** retryable: the answers a retry with the same data can fix. */
function retryable(err: unknown): err is FunctionsError {
  const code = (err as FunctionsError | undefined)?.code;
  return code === "functions/unavailable" || code === "functions/resource-exhausted";
}

/**
 * unknownOutcome: the call may or may not have taken effect (no answer, a
 * timeout, a gateway's error page): only a keyed change may be retried.
 */
function unknownOutcome(err: unknown): boolean {
  const code = (err as FunctionsError | undefined)?.code;
  return code === "functions/internal" || code === "functions/deadline-exceeded" || code === "functions/unknown";
}

/** rolledUp: a roll-up's time, or null for the epoch a first use leaves until its first roll-up. */
function rolledUp(t: Date | undefined): Date | null {
  return t && t.getTime() > 0 ? t : null;
}

/** newKey: a random idempotency key, also outside secure contexts (plain http). */
function newKey(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function retryAfterMs(err: FunctionsError, attempt: number): number {
  const seconds = (err.details as { retry_after_seconds?: number } | undefined)?.retry_after_seconds;
  return seconds ? seconds * 1000 : 200 * attempt;
}

export function shardcount(options: ShardcountOptions): Shardcount {
  const { functions, firestore } = options;
  const consume = options.consume ?? [];
  const maxAttempts = options.maxAttempts ?? 8;
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  async function call<T>(name: string, data: object, keyed = false): Promise<T> {
    const fn = httpsCallable<object, T>(functions, name, { limitedUseAppCheckTokens: consume.includes(name) });
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        return (await fn(data)).data;
      } catch (err) {
        const again = retryable(err) || (keyed && unknownOutcome(err));
        const wait = again ? retryAfterMs(err as FunctionsError, attempt) : 0;
        if (!again || attempt >= maxAttempts || waited + wait > maxWaitMs) throw err;
        waited += wait;
        await sleep(wait);
      }
    }
  }

  type Changed = wire.IncrementCounterResponse;

  // keyedChange sends one change of a counter (a delta, or a choice) with
  // one key for every attempt; a failure carries the key.
  async function keyedChange(counterId: string, what: { delta: number } | { choice: string }, key: string): Promise<Changed> {
    try {
      return await call<Changed>("incrementCounter", { counter_id: counterId, ...what, idempotency_key: key }, true);
    } catch (err) {
      throw Object.assign(err as FunctionsError, { key }) as ChangeError;
    }
  }

  async function change(counterId: string, delta: number, key: string = newKey()): Promise<Like & Increment> {
    const out = await keyedChange(counterId, { delta }, key);
    return { counterId, delta: out.delta, replayed: !!out.replayed, member: !!out.member, changed: !!out.changed, key };
  }

  async function react(counterId: string, choice: string, key: string = newKey()): Promise<Reaction> {
    const out = await keyedChange(counterId, { choice }, key);
    return { counterId, choice: out.choice ?? "", previous: out.previous ?? "", changed: !!out.changed, replayed: !!out.replayed, key };
  }

  // counterOf reads a counter document's snapshot as the client shows it.
  function counterOf(data: DocumentData | undefined, exists: boolean): CountsSnapshot {
    const deleted = data?.deleted === true;
    const counts: Record<string, number> = {};
    for (const [choice, n] of Object.entries(deleted ? {} : (data?.counts ?? {}))) counts[choice] = Number(n);
    return {
      count: deleted ? 0 : Number(data?.count ?? 0),
      counts,
      asOf: rolledUp(data?.rollup_as_of?.toDate?.()),
      exists: exists && !deleted,
      deleted,
      estimate: data?.distinct === true,
    };
  }

  // rowsOf reads getCounters' answer by the ids asked: its rows come in
  // their order, each naming its id, or, an id too long to be one, its
  // first bytes and "…" (as errors echo what they name).
  function rowsOf(asked: string[], answer: wire.GetCountersResponse): Record<string, FeedRow> {
    const rows: Record<string, FeedRow> = {};
    for (const [i, r] of answer.counters.entries()) {
      const a = asked[i];
      const id = a !== undefined && (r.counter_id === a || (r.counter_id.endsWith("…") && a.startsWith(r.counter_id.slice(0, -1)))) ? a : r.counter_id;
      rows[id] = {
        counterId: id, count: r.count ?? 0, asOf: r.as_of ? rolledUp(new Date(r.as_of)) : null, estimate: !!r.estimate,
        ...(r.member !== undefined ? { member: r.member } : {}), ...(r.choice !== undefined ? { choice: r.choice } : {}),
        ...(r.counts ? { counts: r.counts } : {}), ...(r.error ? { error: { code: r.error.code, message: r.error.message } } : {}),
      };
    }
    return rows;
  }

  async function feed(keys: string[], kinds: string[]): Promise<Record<string, FeedRow>> {
    const asked = keys.flatMap((key) => kinds.map((kind) => `${kind}:${key}`));
    return rowsOf(asked, await call<wire.GetCountersResponse>("getCounters", { keys, kinds }));
  }

  function watchFeed(keys: string[], kinds: string[], mirrors: Record<string, Mirror>, onRows: (rows: Record<string, FeedRow>) => void, onError?: (e: Error) => void): Unsubscribe {
    let rows: Record<string, FeedRow> = {};
    let stops: Unsubscribe[] = [];
    let stopped = false;
    // An error of onRows is onError's, from a listener as from the page.
    const show = () => {
      try {
        onRows({ ...rows });
      } catch (e) {
        onError?.(e as Error);
      }
    };
    const update = (id: string, change: Partial<FeedRow>) => {
      if (rows[id] && !rows[id].error) rows[id] = { ...rows[id], ...change };
    };
    // A listener each, once: a path the SDK cannot take (a key that is no
    // document id) is the caller's onError, and the others listen on.
    const listen = (path: string, next: (snap: DocumentSnapshot) => void) => {
      if (stopped) return; // stopped from onRows: nothing more to listen to
      try {
        stops.push(onSnapshot(doc(firestore, path), next, onError));
      } catch (e) {
        onError?.(e as Error);
      }
    };
    feed(keys, kinds).then((page) => {
      if (stopped) return;
      rows = page;
      show();
      const live = (id: string) => rows[id] !== undefined && !rows[id].error; // no listener for a row that failed
      const eachKey = [...new Set(keys)], eachKind = [...new Set(kinds)]; // duplicates listen once
      // One listener a document of the app's, for every kind it mirrors.
      const byDocument = new Map<string, { key: string; kinds: string[] }>();
      for (const kind of eachKind) {
        const m = mirrors[kind];
        if (!m) continue;
        for (const key of eachKey) {
          if (!live(`${kind}:${key}`)) continue;
          const path = `${m.collection}/${key}`;
          byDocument.set(path, { key, kinds: [...(byDocument.get(path)?.kinds ?? []), kind] });
        }
      }
      for (const [path, { key, kinds: mirrored }] of byDocument) {
        listen(path, (snap) => {
          for (const kind of mirrored) {
            const v = snap.get(mirrors[kind].field);
            if (typeof v === "number") update(`${kind}:${key}`, { count: v });
            else if (v && typeof v === "object") update(`${kind}:${key}`, { count: Number(v.count ?? 0), counts: v.counts ?? {} });
          }
          show();
        });
      }
      // The counters' documents of the kinds that mirror nothing: a counter
      // deleted meanwhile is its row's error, as feed answers it.
      for (const kind of eachKind.filter((k) => !mirrors[k])) {
        for (const key of eachKey) {
          const id = `${kind}:${key}`;
          if (!live(id)) continue;
          listen(`counters/${id}`, (snap) => {
            if (!snap.exists()) return; // not used yet: the page's 0
            const c = counterOf(snap.data(), true);
            const { error: _, ...row } = rows[id]; // live at the page: an error since is the deletion's
            if (c.deleted) rows[id] = { ...row, count: 0, ...(row.counts ? { counts: {} } : {}), error: { code: "NOT_FOUND", message: `counter "${id}" was deleted` } };
            else rows[id] = { ...row, count: c.count, asOf: c.asOf, ...(row.counts ? { counts: c.counts } : {}) }; // created again too
            show();
          });
        }
      }
    }).catch((err) => onError?.(err)); // the page's
    return () => {
      stopped = true;
      stops.forEach((stop) => stop());
      stops = [];
    };
  }

  return {
    call,
    feed,
    counters: async (counterIds) => rowsOf(counterIds, await call<wire.GetCountersResponse>("getCounters", { counter_ids: counterIds })),
    watchFeed,
    increment: (counterId, delta = 1, options = {}) => change(counterId, delta, options.key),
    like: (counterId, options = {}) => change(counterId, 1, options.key),
    unlike: (counterId, options = {}) => change(counterId, -1, options.key),
    toggle: (counterId, liked, options = {}) => change(counterId, liked ? -1 : 1, options.key),
    watchCount(counterId, onCount, onError) {
      return onSnapshot(doc(firestore, "counters", counterId), (snap) => {
        const { counts: _, ...c } = counterOf(snap.data(), snap.exists());
        onCount(c);
      }, onError);
    },
    watchCounts(counterId, onCounts, onError) {
      return onSnapshot(doc(firestore, "counters", counterId), (snap) => onCounts(counterOf(snap.data(), snap.exists())), onError);
    },
    watchLiked(counterId, uid, onLiked, onError) {
      return onSnapshot(doc(firestore, "counters", counterId, "members", uid), (snap) => onLiked(snap.exists()), onError);
    },
    react: (counterId, choice, options = {}) => react(counterId, choice, options.key),
    view: (counterId) => change(counterId, 1),
    watchReaction(counterId, uid, onChoice, onError) {
      return onSnapshot(doc(firestore, "counters", counterId, "members", uid), (snap) => onChoice(String(snap.get("choice") ?? "")), onError);
    },
    async myLikes(kind, uid, options = {}) {
      const page = await getDocs(query(collectionGroup(firestore, "members"),
        where("uid", "==", uid), where("kind", "==", kind), orderBy("joined_at", "desc"),
        ...(options.after ? [startAfter(options.after.cursor)] : []), limit(options.limit ?? 20)));
      return page.docs.map((d) => ({ counterId: String(d.get("counter_id")), joinedAt: d.get("joined_at")?.toDate?.() ?? null, cursor: d }));
    },
    async history(counterId, granularity, range) {
      const out = await call<wire.GetCounterResponse>("getCounter", {
        counter_id: counterId,
        history: granularity,
        ...(range?.from ? { from: range.from.toISOString() } : {}),
        ...(range?.to ? { to: range.to.toISOString() } : {}),
      });
      return (out.history ?? []).map((p) => ({ start: new Date(p.start), count: p.count, ...(p.counts ? { counts: p.counts } : {}) }));
    },
    top(window, options = {}) {
      return call<Ranking>("topCounters", { window, ...options });
    },
  };
}
