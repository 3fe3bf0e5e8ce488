// The end of activations: passivation after an idle period (a snapshot when
// dirty, then dropped), and every activation of a shard this node stops
// serving.

import { MovedError } from "../runtime-errors.ts";
import { metrics } from "../metrics.ts";
import type { Activation, CatalogCore } from "./core.ts";
import { snapshot } from "./snapshots.ts";

/** The activation ends: parked turns and waiting readers go to the next one ("moved": the caller retries). */
export function releaseParked(act: Activation): void {
  const waiting = act.readWaiting;
  if (waiting !== undefined) {
    act.readWaiting = undefined;
    for (const t of waiting) t.reject(new MovedError(act.shard));
  }
  const parked = act.parked;
  if (parked === null) return;
  act.parked = null;
  for (const t of parked.values()) t.reject(new MovedError(act.shard));
}

/**
 * How long an activation stays without a turn before it is passivated:
 * the catalog's `idleMs` when given (tests, benchmarks), else its kind's
 * (Behavior.idleMs), else five minutes.
 */
function idleAfter(c: CatalogCore, act: Activation): number {
  return c.o.idleMs ?? c.o.behaviors[act.ref.kind]?.idleMs ?? c.idleMs;
}

export function scheduleIdleCheck(c: CatalogCore, act: Activation): void {
  // A shared callback with the activation as its argument: no closure per check.
  c.o.wheel.schedule(idleAfter(c, act), idleCheck, c, act);
}

function idleCheck(c: CatalogCore, act: Activation): void {
  if (act.dead || c.acts.get(act.id) !== act) return;
  const idleFor = c.now() - act.lastUsed;
  if (
    act.running ||
    act.mailbox.length ||
    act.parked?.size ||
    act.reading ||
    act.readWaiting ||
    idleFor < idleAfter(c, act)
  ) {
    scheduleIdleCheck(c, act);
    return;
  }
  void passivate(c, act);
}

async function passivate(c: CatalogCore, act: Activation): Promise<void> {
  await snapshot(c, act);
  // A message may have arrived while the snapshot was written (or it failed).
  if (
    act.running ||
    act.mailbox.length ||
    act.parked?.size ||
    act.reading ||
    act.readWaiting ||
    act.unsaved !== undefined
  ) {
    scheduleIdleCheck(c, act);
    return;
  }
  if (c.acts.get(act.id) === act) c.acts.delete(act.id);
  act.dead = true;
  c.stats.passivations++;
  metrics.passivated(act.ref.kind);
}

/**
 * Stop serving a shard. Graceful (drain): wait for running turns, snapshot
 * dirty actors, then forget them. Not graceful (lease lost): forget at
 * once; their waiting turns answer "moved".
 */
export async function dropShard(c: CatalogCore, shard: number, graceful: boolean): Promise<void> {
  if (graceful) {
    // The shard's activations stay reachable until all of them are idle at
    // once: a draining turn may call an actor of its own shard (the node
    // serves such calls here, see TurnServices.call), and removing the
    // callee first would make it wait for the shard's next owner, which
    // waits for this drain. Once all are idle no turn of the shard runs, so
    // nothing new starts on it; the loop only catches activations such calls
    // created meanwhile.
    for (;;) {
      const victims = [...c.acts.values()].filter((a) => a.shard === shard);
      if (victims.length === 0) return;
      while (victims.some((a) => !a.dead && (a.running || !a.ready || a.mailbox.length > 0 || a.reading)))
        await new Promise((r) => setTimeout(r, 5));
      for (const a of victims) if (c.acts.get(a.id) === a) c.acts.delete(a.id);
      await Promise.all(
        victims.map(async (a) => {
          await snapshot(c, a);
          a.dead = true;
          releaseParked(a);
        }),
      );
    }
  }
  const victims = [...c.acts.values()].filter((a) => a.shard === shard);
  for (const a of victims) {
    c.acts.delete(a.id);
    a.dead = true;
    for (const t of a.mailbox.splice(0)) t.reject(new MovedError(shard));
    releaseParked(a);
  }
}
