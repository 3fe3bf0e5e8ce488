// Activation: an actor's first message makes its activation, which loads
// the latest snapshot, replays the journal (and the kind's side log), runs
// the kind's upgrades, then resends what its outbox holds and starts the
// mailbox.

import type { ActorRef, OutEvent } from "../../actors/types.ts";
import { UnavailableError } from "../runtime-errors.ts";
import { decodeFact, encodeFact } from "../../proto/codec.ts";
import { continueSpan, inSpan, SpanKind } from "../tracing.ts";
import { metrics } from "../metrics.ts";
import type { Activation, CatalogCore, Handoff } from "./core.ts";
import { drain } from "./mailbox.ts";
import { handOff, HANDOFF, OUTBOX, release, SENT } from "./outbox.ts";
import { scheduleIdleCheck } from "./passivation.ts";
import { copyState, flushReaders } from "./readers.ts";
import { openSnapshot, sizeSnapshots, snapshot } from "./snapshots.ts";

/** A new activation of the actor, loading (it takes turns once ready). */
export function activate(
  c: CatalogCore,
  ref: ActorRef,
  id: string,
  shard: number,
  epoch: number,
  traceparent?: string,
): Activation {
  const act: Activation = {
    ref,
    id,
    shard,
    epoch,
    state: undefined,
    seq: 0,
    snapshotSeq: 0,
    mailbox: [],
    running: false,
    ready: false,
    lastUsed: c.now(),
    dead: false,
    parked: null,
    timers: null,
    outbox: null,
    sent: null,
    ahead: false,
  };
  c.acts.set(id, act);
  c.stats.activations++;
  metrics.activated(ref.kind);
  // A sampled first message traces the activation (snapshot + journal reads).
  const span =
    traceparent === undefined ? null : continueSpan(`${ref.kind} activate`, SpanKind.INTERNAL, traceparent);
  if (span === null) void load(c, act);
  else {
    act.loadSpan = span;
    void load(c, act).finally(() => span.end());
  }
  return act;
}

async function load(c: CatalogCore, act: Activation): Promise<void> {
  const behavior = c.o.behaviors[act.ref.kind];
  try {
    if (!behavior) throw new Error(`no behavior for kind ${act.ref.kind}`);
    const snap = await inSpan(act.loadSpan, () => c.o.store.loadSnapshot(act.shard, act.id));
    const data = snap ? openSnapshot(act, snap.data) : null;
    let state = data !== null ? behavior.fromSnapshot(data, act.ref) : behavior.initial(act.ref);
    let seq = snap ? snap.seq : 0;
    const entries = await inSpan(act.loadSpan, () => c.o.store.readJournal(act.shard, act.id, seq));
    // The side log's facts after the snapshot's position, each applied
    // before the first journaled fact decided after it (Behavior.sideLog).
    const side = behavior.sideLog;
    const sidePos = side === undefined ? 0 : side.position(state);
    const sideFacts =
      side !== undefined && c.o.hooks.sideFacts ? await c.o.hooks.sideFacts(act, sidePos) : [];
    let next = 0;
    let oldest = Infinity;
    const sideUpTo = (pos: number) => {
      for (; next < sideFacts.length && sideFacts[next]!.pos <= pos; next++) {
        state = behavior.apply(state, sideFacts[next]!.fact, act.ref);
        oldest = Math.min(oldest, sideFacts[next]!.at);
      }
    };
    for (const e of entries) {
      const f = decodeFact(e.data);
      if (OUTBOX in f) (act.outbox ??= new Map()).set(e.seq, f[OUTBOX] as unknown as OutEvent[]);
      else if (HANDOFF in f) (act.handoffs ??= new Map()).set(e.seq, f[HANDOFF] as unknown as Handoff[]);
      else if (SENT in f)
        for (const s of f[SENT] as number[]) {
          act.outbox?.delete(s);
          act.handoffs?.delete(s);
        }
      else {
        const at = side?.decidedAt(f);
        if (at !== undefined) sideUpTo(at);
        state = behavior.apply(state, f, act.ref);
      }
      seq = e.seq;
    }
    sideUpTo(Infinity);
    if (next > 0) act.unsaved = { n: next, since: oldest };
    act.snapshotSeq = snap ? snap.seq : 0;
    if (snap) sizeSnapshots(c, act, snap.data.length);
    // Behavior.upgrade: conversions run before any turn, each step one
    // fenced append (a failure fails the activation, as a failed load).
    let upgraded = false;
    for (let step = behavior.upgrade?.(state, act.ref); step; step = behavior.upgrade!(state, act.ref)) {
      if (step.facts.length === 0 && step.writes.length === 0) break;
      const entries = step.facts.map(encodeFact);
      await c.o.store.append(act.shard, act.epoch, act.id, seq + 1, entries, step.writes);
      for (const f of step.facts) state = behavior.apply(state, f, act.ref);
      seq += entries.length;
      upgraded = true;
    }
    act.state = state;
    act.seq = seq;
    // The converted state's snapshot replaces the old one at once.
    if (upgraded) await snapshot(c, act);
    // Readers see the committed view; taken now, the first reader need not
    // wait for a batch in flight to be durable.
    if (behavior.readers?.length && (behavior.servesReaders?.(act.ref) ?? true))
      act.committed = copyState(behavior, act);
    act.ready = true;
    c.o.hooks.settled?.(act);
    if (side !== undefined) c.o.hooks.sideSaved?.(act, sidePos);
    scheduleIdleCheck(c, act);
    // Events whose facts are durable but whose delivery was never
    // acknowledged (the previous owner died in between): send them again,
    // under their original keys, before any new turn emits.
    if (act.outbox !== null && act.outbox.size === 0) act.outbox = null;
    if (act.outbox !== null) {
      const outbox = act.outbox;
      for (const s of [...outbox.keys()].sort((a, b) => a - b)) void release(c, act, s, outbox.get(s)!);
    }
    // Hand-offs likewise (their handlers are idempotent).
    if (act.handoffs !== undefined && act.handoffs.size === 0) act.handoffs = undefined;
    if (act.handoffs !== undefined)
      for (const [s, h] of [...act.handoffs].sort((a, b) => a[0] - b[0])) void handOff(c, act, s, h);
    flushReaders(c, act);
    void drain(c, act);
  } catch (err) {
    // Activation failed (store unreachable...): fail the waiting turns and
    // forget the activation so the next message tries again.
    c.acts.delete(act.id);
    act.dead = true;
    const e = err instanceof Error ? err : new Error(String(err));
    for (const t of [...act.mailbox.splice(0), ...(act.readWaiting ?? [])])
      t.reject(new UnavailableError(`activation failed: ${e.message}`));
    act.readWaiting = undefined;
  }
}
