// Snapshots: an activation's state written beside its journal (with its
// unacknowledged outbox), spaced by the size of the last one, one at a time.

import type { OutEvent } from "../../actors/types.ts";
import { FencedError } from "../runtime-errors.ts";
import {
  SNAPSHOT_CHARS_PER_FACT,
  UNSAVED_MS,
  type Activation,
  type CatalogCore,
  type Handoff,
} from "./core.ts";

/** Snapshot envelope marker: the behaviour's snapshot plus the pending outbox. */
const ENVELOPE = "\u0001";

/**
 * The behaviour's part of a stored snapshot; the unacknowledged outbox and
 * hand-off entries of an envelope go back into the activation.
 */
export function openSnapshot(act: Activation, data: string): string {
  if (!data.startsWith(ENVELOPE)) return data;
  const env = JSON.parse(data.slice(ENVELOPE.length)) as {
    s: string;
    o: [number, OutEvent[]][];
    h?: [number, Handoff[]][];
  };
  for (const [seq, events] of env.o) (act.outbox ??= new Map()).set(seq, events);
  for (const [seq, h] of env.h ?? []) (act.handoffs ??= new Map()).set(seq, h);
  return env.s;
}

/** Whether the activation's unjournaled facts should be snapshotted now (Activation.unsaved). */
export function unsavedDue(c: CatalogCore, act: Activation): boolean {
  const u = act.unsaved!;
  const every = act.snapshotEvery ?? c.snapshotEvery;
  return u.n >= every || c.now() - u.since >= UNSAVED_MS * Math.max(1, every / c.snapshotEvery);
}

/** Snapshot the activation when it is ahead of its last snapshot; one at a time. */
export function snapshot(c: CatalogCore, act: Activation): Promise<void> {
  const running = act.snapshotting;
  // A waiting caller's snapshot must not start inside a batch: its facts
  // are in `state` but not yet at `seq`, and replay would apply them twice
  // (or keep facts whose append then failed). The batch snapshots itself
  // at its end when one is due (drain, persist).
  if (running !== undefined) return running.then(() => (act.ahead ? undefined : snapshot(c, act)));
  if ((act.seq === act.snapshotSeq && act.unsaved === undefined) || act.dead) return Promise.resolve();
  const p: Promise<void> = writeSnapshot(c, act).finally(() => {
    if (act.snapshotting === p) act.snapshotting = undefined;
  });
  act.snapshotting = p;
  return p;
}

async function writeSnapshot(c: CatalogCore, act: Activation): Promise<void> {
  const behavior = c.o.behaviors[act.ref.kind]!;
  const seq = act.seq;
  const position = behavior.sideLog?.position(act.state);
  const unsaved = act.unsaved;
  act.unsaved = undefined;
  let data = behavior.toSnapshot(act.state);
  // The snapshot drops the journal it covers: unacknowledged outbox entries ride along.
  if ((act.outbox !== null && act.outbox.size) || act.handoffs?.size) {
    const env: { s: string; o: [number, OutEvent[]][]; h?: [number, Handoff[]][] } = {
      s: data,
      o: act.outbox === null ? [] : [...act.outbox.entries()],
    };
    if (act.handoffs?.size) env.h = [...act.handoffs.entries()];
    data = ENVELOPE + JSON.stringify(env);
  }
  try {
    await c.o.store.saveSnapshot(act.shard, act.epoch, act.id, { seq, data });
    act.snapshotSeq = Math.max(act.snapshotSeq, seq);
    sizeSnapshots(c, act, data.length);
    c.stats.snapshots++;
    if (position !== undefined) c.o.hooks.sideSaved?.(act, position);
  } catch (err) {
    if (err instanceof FencedError) c.o.hooks.fenced(act.shard);
    // Otherwise the journal (and the side log) still hold everything; the next snapshot retries.
    if (unsaved !== undefined) {
      const later = act.unsaved as Activation["unsaved"];
      act.unsaved = {
        n: unsaved.n + (later?.n ?? 0),
        since: Math.min(unsaved.since, later?.since ?? Infinity),
      };
    }
  }
}

/** Space snapshots by the size of the last one (Activation.snapshotEvery). */
export function sizeSnapshots(c: CatalogCore, act: Activation, chars: number): void {
  const every = Math.ceil(chars / SNAPSHOT_CHARS_PER_FACT);
  if (every > c.snapshotEvery) act.snapshotEvery = every;
  else act.snapshotEvery = undefined;
}
