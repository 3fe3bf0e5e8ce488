// Replies reused while their actor's journal has not moved
// (Behavior.durableReads).
//
// Some leaf reads are asked on every request of a kind and answered from
// the callee's state alone: every channel send asks the realm for its
// roster (the changes since the caller's copy, and the sender's mutes and
// alert words), which in cluster mode was a round trip to the realm's node
// and a turn there, per send. Such a reply is a function of the callee's
// durable state and the args: the callee decides it after its pending
// batch is durable, and nothing that is not journaled changes it. The
// actor's last journal seq (Store.lastSeq) names that state, so a caller
// that asked the same thing when the seq was the same may use the answer
// it got then.
//
// Read-your-writes holds: a change acknowledged to anyone was appended
// before the acknowledgement, so a read that starts after it sees the seq
// move and asks again. The seq is read before the call, so a reply that
// already shows a later append is kept under an older seq, never under a
// newer one, and misses once.
//
// Only for actors served by another node: a local call is a turn in this
// process, as cheap as the store read that would replace it.

import { LRUCache } from "lru-cache";
import type { Caller, Obj, Value } from "../../actors/types.ts";
import { metrics } from "../metrics.ts";
import type { Store } from "../storage/contract.ts";
import type { ActorRequest, ActorResponse } from "../transport/contract.ts";

/** Replies kept (whole rosters are the largest: about 200 bytes a user). */
const MAX_ENTRIES = 10_000;
const MAX_CHARS = 32 * 1024 * 1024;

interface Kept {
  seq: number;
  json: string;
}

export class DurableReads {
  private readonly kept = new LRUCache<string, Kept>({
    max: MAX_ENTRIES,
    maxSize: MAX_CHARS,
    sizeCalculation: (k) => k.json.length + 1,
  });

  constructor(private readonly store: Store) {}

  /**
   * The reply of `req` to the actor stored as `actor`: the one kept, when
   * its journal is where it was then; else `send` it and keep the reply.
   */
  async request(
    req: ActorRequest,
    actor: string,
    send: (req: ActorRequest) => Promise<ActorResponse>,
  ): Promise<ActorResponse> {
    const key = cacheKey(actor, req.method, req.args, req.caller);
    // The store unreachable: asked as any call is (the actor may still answer).
    const seq = await this.store.lastSeq(req.shard, actor).catch(() => null);
    const kept = this.kept.get(key);
    if (kept !== undefined && kept.seq === seq) {
      metrics.durableRead(req.ref.kind, req.method, true);
      return { ok: true, value: JSON.parse(kept.json) as Value };
    }
    metrics.durableRead(req.ref.kind, req.method, false);
    const res = await send(req);
    if (res.ok && seq !== null && !isVolatile(res.value)) this.kept.set(key, { seq, json: jsonOf(res) });
    return res;
  }
}

/** One string per distinct call: JSON keeps key order, which a caller's args have stable. */
function cacheKey(actor: string, method: string, args: Obj, caller: Caller | null): string {
  return `${actor}\u0000${method}\u0000${JSON.stringify(args)}\u0000${caller === null ? "" : JSON.stringify(caller)}`;
}

/** The reply as JSON text: the bytes it came in when it crossed the network. */
function jsonOf(res: ActorResponse & { ok: true }): string {
  return res.json !== undefined ? Buffer.from(res.json).toString("utf8") : JSON.stringify(res.value ?? null);
}

/** A reply that says it depends on more than its actor's journal (Behavior.durableReads). */
function isVolatile(value: Value): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value) && value.volatile === true;
}
