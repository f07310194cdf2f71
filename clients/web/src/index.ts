// shardcount's client for web apps and Node, on the Firebase JS SDK: the
// counters' functions through httpsCallable, their documents through
// Firestore listeners. It sends each increment or like with an idempotency
// key of its own and retries it, with the same key, when shardcount says a
// retry helps (unavailable, resource-exhausted: after the wait it names),
// and never otherwise, so each counts once.
//
//   import { shardcount } from "shardcount-client";
//   const sc = shardcount({ functions: getFunctions(app), firestore: getFirestore(app) });
//   await sc.like("likes:post-1");
//   sc.watchCount("likes:post-1", ({ count }) => render(count));
//   sc.watchLiked("likes:post-1", uid, (liked) => heart(liked));

import { httpsCallable, type Functions, type FunctionsError } from "firebase/functions";
import { doc, onSnapshot, type Firestore, type Unsubscribe } from "firebase/firestore";

export interface ShardcountOptions {
  functions: Functions;
  firestore: Firestore;
  /** Functions whose calls carry a limited-use App Check token (the server's APP_CHECK_CONSUME). */
  consume?: string[];
  /** Attempts of one call, its retries included (default 8). */
  maxAttempts?: number;
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

/** A counter as its document says, live. */
export interface CountSnapshot {
  count: number;
  /** The roll-up's time; null before the counter exists. */
  asOf: Date | null;
  /** Its document exists: a counter of a kind exists from its first use. */
  exists: boolean;
  /** It was deleted: render it as gone, not as 0. */
  deleted: boolean;
}

export type Granularity = "minute" | "hour" | "day";
export type Window = Granularity | "last_hour" | "last_day" | "all";

export interface Ranking {
  window: Window;
  kind?: string;
  start?: string;
  /** For a rolling window: no other counter can rank among these. */
  exact?: boolean;
  counters: { counter_id: string; count: number }[];
}

export interface Shardcount {
  /** Adds delta (default 1) once; key: the idempotency key (default a fresh one). */
  increment(counterId: string, delta?: number, options?: { key?: string }): Promise<Increment>;
  like(counterId: string): Promise<Like>;
  unlike(counterId: string): Promise<Like>;
  /** Likes when liked is false, unlikes when it is true. */
  toggle(counterId: string, liked: boolean): Promise<Like>;
  watchCount(counterId: string, onCount: (c: CountSnapshot) => void, onError?: (e: Error) => void): Unsubscribe;
  watchLiked(counterId: string, uid: string, onLiked: (liked: boolean) => void, onError?: (e: Error) => void): Unsubscribe;
  history(counterId: string, granularity: Granularity, range?: { from?: Date; to?: Date }): Promise<{ start: Date; count: number }[]>;
  top(window: Window, options?: { kind?: string; limit?: number; previous?: boolean }): Promise<Ranking>;
  /** Any function, with the same retry rule. */
  call<T>(name: string, data: object): Promise<T>;
}

/** retryable: the answers a retry with the same data can fix. */
function retryable(err: unknown): err is FunctionsError {
  const code = (err as FunctionsError | undefined)?.code;
  return code === "functions/unavailable" || code === "functions/resource-exhausted";
}

function retryAfterMs(err: FunctionsError, attempt: number): number {
  const seconds = (err.details as { retry_after_seconds?: number } | undefined)?.retry_after_seconds;
  return seconds ? seconds * 1000 : 200 * attempt;
}

export function shardcount(options: ShardcountOptions): Shardcount {
  const { functions, firestore } = options;
  const consume = options.consume ?? [];
  const maxAttempts = options.maxAttempts ?? 8;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  async function call<T>(name: string, data: object): Promise<T> {
    const fn = httpsCallable<object, T>(functions, name, { limitedUseAppCheckTokens: consume.includes(name) });
    for (let attempt = 1; ; attempt++) {
      try {
        return (await fn(data)).data;
      } catch (err) {
        if (!retryable(err) || attempt >= maxAttempts) throw err;
        await sleep(retryAfterMs(err, attempt));
      }
    }
  }

  async function change(counterId: string, delta: number, key: string = crypto.randomUUID()): Promise<Like & Increment> {
    // One key for every attempt of this change.
    const out = await call<{ delta: number; replayed?: boolean; member?: boolean; changed?: boolean }>("incrementCounter", {
      counter_id: counterId,
      delta,
      idempotency_key: key,
    });
    return { counterId, delta: out.delta, replayed: !!out.replayed, member: !!out.member, changed: !!out.changed, key };
  }

  return {
    call,
    increment: (counterId, delta = 1, options = {}) => change(counterId, delta, options.key),
    like: (counterId) => change(counterId, 1),
    unlike: (counterId) => change(counterId, -1),
    toggle: (counterId, liked) => change(counterId, liked ? -1 : 1),
    watchCount(counterId, onCount, onError) {
      return onSnapshot(
        doc(firestore, "counters", counterId),
        (snap) => {
          const data = snap.data();
          const deleted = data?.deleted === true;
          onCount({
            count: deleted ? 0 : Number(data?.count ?? 0),
            asOf: data?.rollup_as_of?.toDate?.() ?? null,
            exists: snap.exists() && !deleted,
            deleted,
          });
        },
        onError,
      );
    },
    watchLiked(counterId, uid, onLiked, onError) {
      return onSnapshot(doc(firestore, "counters", counterId, "members", uid), (snap) => onLiked(snap.exists()), onError);
    },
    async history(counterId, granularity, range) {
      const out = await call<{ history: { start: string; count: number }[] }>("getCounter", {
        counter_id: counterId,
        history: granularity,
        ...(range?.from ? { from: range.from.toISOString() } : {}),
        ...(range?.to ? { to: range.to.toISOString() } : {}),
      });
      return out.history.map((p) => ({ start: new Date(p.start), count: p.count }));
    },
    top(window, options = {}) {
      return call<Ranking>("topCounters", { window, ...options });
    },
  };
}
