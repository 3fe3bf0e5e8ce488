// The outbox: a batch's events and hand-offs are journaled with its facts
// and released once the append is durable; once acknowledged they are
// journaled as sent with the next append, and until then given again with
// a backoff while the activation lives, and at its next activation.

import type { OutEvent } from "../../actors/types.ts";
import type { Activation, CatalogCore, Handoff } from "./core.ts";

/** Journal entries the runtime writes beside an actor's facts (never shown to `apply`). */
export const OUTBOX = "~outbox";
export const SENT = "~sent";
export const HANDOFF = "~handoff";

/** Backoff of a failed outbox or hand-off entry's next attempt (retryLater). */
const ENTRY_RETRY_MIN_MS = 1_000;
const ENTRY_RETRY_MAX_MS = 30_000;

/**
 * Hand an outbox entry to the router; once acknowledged, journal it as sent
 * with the next append. The returned promise settles with the first
 * attempt; a failed entry is given again (retryLater) while this
 * activation lives, under the same key.
 */
export function release(
  c: CatalogCore,
  act: Activation,
  seq: number,
  events: OutEvent[],
  attempt = 0,
): Promise<void> {
  const pending = () => act.outbox?.get(seq) === events;
  return c.o.hooks.emit(act.ref, events, `${act.id}#${seq}`).then(
    (ok) => {
      if (!pending()) return;
      if (!ok) return retryLater(c, act, attempt, pending, () => release(c, act, seq, events, attempt + 1));
      act.outbox!.delete(seq);
      if (act.outbox!.size === 0) act.outbox = null;
      (act.sent ??= []).push(seq);
    },
    () => retryLater(c, act, attempt, pending, () => release(c, act, seq, events, attempt + 1)),
  );
}

/** Give a journaled hand-off entry to the node; once acknowledged, journal it as sent with the next append. */
export function handOff(
  c: CatalogCore,
  act: Activation,
  seq: number,
  handoffs: Handoff[],
  attempt = 0,
): Promise<unknown> | undefined {
  const hook = c.o.hooks.handoff;
  if (!hook) return undefined;
  const pending = () => act.handoffs?.get(seq) === handoffs;
  return hook(act.ref, handoffs, `${act.id}#${seq}`).then(
    (ok) => {
      if (!pending()) return;
      if (!ok) return retryLater(c, act, attempt, pending, () => handOff(c, act, seq, handoffs, attempt + 1));
      act.handoffs!.delete(seq);
      if (act.handoffs!.size === 0) act.handoffs = undefined;
      (act.sent ??= []).push(seq);
    },
    () => retryLater(c, act, attempt, pending, () => handOff(c, act, seq, handoffs, attempt + 1)),
  );
}

/**
 * An outbox or hand-off entry failed (its router or handler gave up, e.g.
 * NATS was down for its whole retry budget): try it again after a backoff
 * while this activation is the current one. Without this, an actor that
 * stays busy (a popular conversation) is never activated again, and the
 * entry would wait for that forever. An actor that goes idle is still
 * passivated: its entries wait in its snapshot or journal for its next
 * activation (an entry that can never be delivered must not pin an
 * activation). Not awaited by the first attempt's caller.
 */
function retryLater(
  c: CatalogCore,
  act: Activation,
  attempt: number,
  pending: () => boolean,
  again: () => unknown,
): void {
  const ms = Math.min(ENTRY_RETRY_MIN_MS * 2 ** attempt, ENTRY_RETRY_MAX_MS);
  c.o.wheel.schedule(ms, retryDue, c, act, { pending, again });
}

/** A retry is due (retryLater); one function for every entry. */
function retryDue(
  c: CatalogCore,
  act: Activation,
  r: { pending: () => boolean; again: () => unknown },
): void {
  if (act.dead || c.acts.get(act.id) !== act || !r.pending()) return;
  c.stats.entryRetries++;
  void r.again();
}
