// The mailbox: an activation's turns, one at a time, decided in batches whose
// facts go to the journal in one append (group commit) before their replies,
// events and hand-offs are released.

import type { Behavior, Decision, Obj, OutEvent, Value } from "../../actors/types.ts";
import { FencedError, MovedError, UnavailableError } from "../runtime-errors.ts";
import { encodeFact } from "../../proto/codec.ts";
import type { RecordWrite } from "../storage/contract.ts";
import { withSpan } from "../tracing.ts";
import { metrics } from "../metrics.ts";
import { nextMacrotask } from "../transport/retry.ts";
import { decide, type Activation, type CatalogCore, type Handoff, type Turn } from "./core.ts";
import { handOff, HANDOFF, OUTBOX, release, SENT } from "./outbox.ts";
import { releaseParked } from "./passivation.ts";
import { flushReaders } from "./readers.ts";
import { snapshot, unsavedDue } from "./snapshots.ts";

/**
 * Test-only crash point (inert unless the variable is set): a node whose
 * environment has ZULIP_TEST_CRASH_AFTER_APPEND kills itself with SIGKILL
 * right after a journal append whose turn arguments contain that text,
 * before the turn's events reach the router.
 */
const CRASH_AFTER_APPEND = process.env.ZULIP_TEST_CRASH_AFTER_APPEND || null;

/**
 * Run the mailbox. Group commit: the turns waiting in the mailbox are
 * decided one after the other, each seeing the facts of the ones before
 * (applied in memory at once), then all their facts go to the journal in
 * one append. Replies and events are released only once that append is
 * durable, so nobody observes a state that could still be lost. If the
 * append fails, the in-memory state is ahead of the journal: the
 * activation is discarded and the next message reloads it from the store.
 */
export async function drain(c: CatalogCore, act: Activation): Promise<void> {
  if (act.running) return;
  act.running = true;
  const behavior = c.o.behaviors[act.ref.kind]!;
  try {
    while (act.mailbox.length && !act.dead) {
      const done: { turn: Turn; decision: Decision }[] = [];
      const woken: { turn: Turn; reply: Value }[] = [];
      /** The batch's facts to journal, and all of them in order (Behavior.unjournaled ones too). */
      const facts: Obj[] = [];
      const applied: Obj[] = [];
      const writes: RecordWrite[] = [];
      const unjournaled = behavior.unjournaled;
      while (act.mailbox.length && done.length < c.batchLimit) {
        // A turn that may read records waits for the batch's writes (Behavior.blind).
        if (writes.length && !behavior.blind?.includes(act.mailbox[0]!.method)) break;
        const turn = act.mailbox.shift()!;
        const decision = await decide(c, act, behavior, turn);
        if (!decision) continue;
        if (decision.writes) for (const w of decision.writes) writes.push(w);
        if (decision.facts && decision.facts.length) {
          act.ahead = true;
          let state = act.state;
          for (const f of decision.facts) state = behavior.apply(state, f, act.ref);
          act.state = state;
          let kept = 0;
          for (const f of decision.facts) {
            applied.push(f);
            if (unjournaled?.(f)) kept++;
            else facts.push(f);
          }
          if (kept) {
            const u = (act.unsaved ??= { n: 0, since: c.now() });
            u.n += kept;
          }
        }
        // Parking and waking take effect at once so the next turn of the
        // batch sees them; the replies still wait for the append below.
        if (decision.wake) {
          for (const w of decision.wake) {
            const t = act.parked?.get(w.key);
            if (t === undefined) continue;
            act.parked!.delete(w.key);
            woken.push({ turn: t, reply: w.reply });
          }
        }
        if (decision.park !== undefined) {
          const parked = (act.parked ??= new Map());
          const old = parked.get(decision.park);
          if (old !== undefined) woken.push({ turn: old, reply: null });
          parked.set(decision.park, turn);
        }
        if (decision.again !== undefined) {
          // Decided again next, on the state these facts make (Decision.again).
          turn.args = decision.again;
          act.mailbox.unshift(turn);
          continue;
        }
        done.push({ turn, decision });
      }
      // Outbox: the events of the batch are journaled in the same append as
      // its facts, so a crash after the append cannot lose them.
      const events: OutEvent[] = [];
      for (const { decision } of done) if (decision.events) events.push(...decision.events);
      let outboxSeq: number | null = null;
      const handoffs: Handoff[] = [];
      for (const { decision } of done) if (decision.handoffs) handoffs.push(...decision.handoffs);
      let handoffSeq: number | null = null;
      // The committed view exists only if it was taken before this batch's first fact.
      const forCommitted = act.committed !== undefined && applied.length ? applied : null;
      if (facts.length || writes.length) {
        const journal = facts;
        if (act.sent !== null) {
          journal.unshift({ [SENT]: act.sent });
          act.sent = null;
        }
        if (events.length) {
          journal.push({ [OUTBOX]: events as unknown as Value[] });
          outboxSeq = act.seq + journal.length;
          // Before the append: a snapshot it triggers must carry the entry.
          (act.outbox ??= new Map()).set(outboxSeq, events);
        }
        if (handoffs.length) {
          journal.push({ [HANDOFF]: handoffs as unknown as Value[] });
          handoffSeq = act.seq + journal.length;
          (act.handoffs ??= new Map()).set(handoffSeq, handoffs);
        }
        if (!(await persist(c, act, journal, [...done, ...woken], writes))) return;
        if (forCommitted !== null) {
          let view = act.committed;
          for (const f of forCommitted) view = behavior.apply(view, f, act.ref);
          act.committed = view;
        }
        act.ahead = false;
        flushReaders(c, act);
        c.o.hooks.settled?.(act);
        if (CRASH_AFTER_APPEND && done.some((d) => JSON.stringify(d.turn.args).includes(CRASH_AFTER_APPEND)))
          process.kill(process.pid, "SIGKILL");
      } else if (applied.length) {
        // Unjournaled facts only: nothing to wait for.
        if (forCommitted !== null) {
          let view = act.committed;
          for (const f of forCommitted) view = behavior.apply(view, f, act.ref);
          act.committed = view;
        }
        act.ahead = false;
        flushReaders(c, act);
      }
      let emitted: Promise<unknown> | undefined;
      if (outboxSeq !== null) {
        emitted = release(c, act, outboxSeq, events);
      } else if (events.length) {
        // No facts, nothing durable: ephemeral events (typing...) go out as they are.
        void c.o.hooks.emit(act.ref, events, null);
      }
      let handed: Promise<unknown> | undefined;
      if (handoffs.length) {
        // Hand-offs start beside the events, not after them: a send's
        // reply waits for its hand-offs (the rows of its sender and
        // flagged recipients, a few turns since nothing is stored per
        // ordinary recipient), and must not wait for its events' fan-out
        // to every online recipient too (a send's latency grew with its
        // audience's online users). The next macrotask: the parked polls
        // the events woke are answered in microtasks, and their
        // responses are written before the hand-offs take the CPU. A batch
        // whose turns wait for their events (replyAfterEvents: subscription
        // changes) hands off once the events are out, so that a
        // Notification Bot post that follows a subscription reaches the new
        // subscribers, and a reply that waits for both waits for the events.
        const afterEvents = emitted !== undefined && done.some((d) => d.decision.replyAfterEvents);
        const start =
          emitted === undefined
            ? Promise.resolve()
            : afterEvents
              ? emitted.then(nextMacrotask, nextMacrotask)
              : nextMacrotask();
        handed =
          handoffSeq !== null
            ? start.then(() => handOff(c, act, handoffSeq, handoffs))
            : start.then(() => c.o.hooks.handoff?.(act.ref, handoffs, null).catch(() => false));
      }
      for (const { turn, decision } of done) {
        const published = decision.notices?.length
          ? Promise.all(decision.notices.map((n) => c.o.hooks.notice(n.subject, n.data)))
          : undefined;
        if (decision.park !== undefined) continue;
        const reply = decision.replyJson ?? decision.reply ?? null;
        const answer = published
          ? () => void published.then(() => turn.resolve(reply))
          : () => turn.resolve(reply);
        if (decision.replyAfterHandoffs && handed !== undefined) void handed.then(answer);
        else if (decision.replyAfterEvents && emitted !== undefined) void emitted.then(answer);
        else answer();
      }
      for (const w of woken) w.turn.resolve(w.reply);
      if (act.unsaved !== undefined && act.snapshotting === undefined && unsavedDue(c, act))
        void snapshot(c, act);
    }
    if (act.dead) for (const t of act.mailbox.splice(0)) t.reject(new MovedError(act.shard));
  } finally {
    act.running = false;
    act.lastUsed = c.now();
    // An idle activation keeps no grown buffers: drop the mailbox's backing
    // store and the emptied parked-turn table.
    if (act.mailbox.length === 0) act.mailbox = [];
    if (act.parked !== null && act.parked.size === 0) act.parked = null;
  }
}

/**
 * A turn of an idle activation decided and applied at once by its kind's
 * synchronous decider (Behavior.inline), outside the mailbox: the turn the
 * mailbox would have run first, as the mailbox would have run it when its
 * facts are all unjournaled (nothing to wait for), minus its promises.
 * Returns the reply, or undefined when not taken (the decider declined, or
 * its decision needs the mailbox: journaled facts, events, a park...); the
 * caller then sends the turn the usual way.
 */
export function inlineTurn(
  c: CatalogCore,
  act: Activation,
  behavior: Behavior<unknown>,
  decider: NonNullable<Behavior<unknown>["inline"]>[string],
  turn: Turn,
): { reply: Value } | undefined {
  if (!act.ready || act.running || act.mailbox.length !== 0 || act.dead || turn.deadline < c.now())
    return undefined;
  const started = performance.now();
  let decision: Decision | null;
  // Running: whatever the decider's context does cannot start the mailbox meanwhile.
  act.running = true;
  try {
    decision = decider(act.state, turn.args, c.o.hooks.context(act, turn), turn.caller);
  } catch {
    decision = null; // the usual path decides again and answers the error
  } finally {
    act.running = false;
  }
  if (decision === null || !inlineable(decision, behavior)) return undefined;
  c.stats.turns++;
  const facts = decision.facts;
  if (facts !== undefined && facts.length) {
    let state = act.state;
    for (const f of facts) state = behavior.apply(state, f, act.ref);
    act.state = state;
    const u = (act.unsaved ??= { n: 0, since: c.now() });
    u.n += facts.length;
    if (act.committed !== undefined) {
      let view: unknown = act.committed;
      for (const f of facts) view = behavior.apply(view, f, act.ref);
      act.committed = view;
    }
    flushReaders(c, act);
  }
  if (decision.wake)
    for (const w of decision.wake) {
      const t = act.parked?.get(w.key);
      if (t === undefined) continue;
      act.parked!.delete(w.key);
      t.resolve(w.reply);
    }
  if (act.parked !== null && act.parked.size === 0) act.parked = null;
  act.lastUsed = c.now();
  if (act.unsaved !== undefined && act.snapshotting === undefined && unsavedDue(c, act))
    void snapshot(c, act);
  metrics.turn(act.ref.kind, performance.now() - started);
  return { reply: decision.reply ?? null };
}

/** Whether a decision is one `inlineTurn` may apply: nothing in it waits for the journal. */
function inlineable(d: Decision, behavior: Behavior<unknown>): boolean {
  if (d.events?.length || d.handoffs?.length || d.writes?.length || d.notices?.length) return false;
  if (d.replyJson !== undefined) return false;
  if (d.park !== undefined || d.again !== undefined || d.replyAfterEvents || d.replyAfterHandoffs)
    return false;
  const unjournaled = behavior.unjournaled;
  if (d.facts !== undefined)
    for (const f of d.facts) if (unjournaled === undefined || !unjournaled(f)) return false;
  return true;
}

/** Append a batch's facts; on failure fail the batch and discard the activation. */
async function persist(
  c: CatalogCore,
  act: Activation,
  facts: Obj[],
  done: { turn: Turn }[],
  writes: RecordWrite[] = [],
): Promise<boolean> {
  const started = performance.now();
  try {
    const before = c.o.hooks.beforeAppend?.(act, facts);
    if (before !== undefined) await before;
    const entries = facts.map(encodeFact);
    // Group commit: the append runs under the first sampled turn of the
    // batch, on its own so the trace shows this actor's write; the appends
    // of unsampled batches share one store write with the other actors of
    // their shard that append in the same tick.
    const traced = done.find((d) => d.turn.span)?.turn.span;
    await (traced
      ? withSpan(traced, () => c.o.store.append(act.shard, act.epoch, act.id, act.seq + 1, entries, writes))
      : c.commit.queueAppend(act, entries, writes));
    metrics.appended(facts.length, performance.now() - started);
  } catch (err) {
    const fenced = err instanceof FencedError;
    if (fenced) {
      c.stats.fenced++;
      c.o.hooks.fenced(act.shard);
    }
    act.dead = true;
    if (c.acts.get(act.id) === act) c.acts.delete(act.id);
    const reason = fenced
      ? () => new MovedError(act.shard)
      : () => new UnavailableError(`journal append failed: ${(err as Error).message}`);
    for (const d of done) d.turn.reject(reason());
    for (const t of act.mailbox.splice(0)) t.reject(reason());
    releaseParked(act);
    return false;
  }
  act.seq += facts.length;
  if (act.seq - act.snapshotSeq >= (act.snapshotEvery ?? c.snapshotEvery) && !act.snapshotting)
    void snapshot(c, act);
  return true;
}
