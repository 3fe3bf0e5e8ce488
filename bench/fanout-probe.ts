// A probe of what one event costs the store per online user: an embedded
// server in this process whose store counts every write, 1,000 users
// (the owner and generic bots) each with a registered queue and a parked
// GET /events, one channel message to all of them. Prints the store writes
// made while the message reached the 1,000 queues (send to last poll
// answered), and those of the 1,000 polls that acknowledge it and park
// again, per delivered event per online user: store calls (an `appendMany`
// is one), journal entries, their bytes, and snapshots. Deterministic
// (counts, not timings), apart from how group commit splits store calls.
// `npx tsx bench/fanout-probe.ts` (BENCH_FANOUT_USERS, default 1,000);
// FANOUT_PROBE_PROFILE=<file> also writes a CPU profile of the measured
// delivery (send to last poll answered).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import type { AppendItem, Store } from "../cluster/storage/contract.ts";
import { PROBE_OWNER, startProbeServer } from "./probe-server.ts";
import { api, channelWith, createBots, pool, type BenchUser } from "./client.ts";
import { overriding } from "../test/support/store-wrap.ts";

const USERS = Number(process.env.BENCH_FANOUT_USERS ?? 1000);
const PROFILE = process.env.FANOUT_PROBE_PROFILE;

/** Writes seen by the store, split into the queue kind's ids and the others. */
interface Counts {
  calls: number;
  entries: number;
  bytes: number;
  snapshots: number;
  snapshotBytes: number;
}
const zero = (): Counts => ({ calls: 0, entries: 0, bytes: 0, snapshots: 0, snapshotBytes: 0 });
let queue = zero();
let other = zero();

function count(items: readonly AppendItem[]): void {
  const touched = new Set<Counts>();
  for (const it of items) {
    const c = it.actor.startsWith("queue.") ? queue : other;
    touched.add(c);
    c.entries += it.entries.length;
    for (const e of it.entries) c.bytes += e.byteLength;
  }
  for (const c of touched) c.calls++;
}

function counting(store: Store): Store {
  return overriding(store, {
    append: (...a) => {
      count([{ actor: a[2], firstSeq: a[3], entries: a[4] }]);
      return store.append(...a);
    },
    appendMany: (...a) => {
      count(a[2]);
      return store.appendMany(...a);
    },
    saveSnapshot: (...a) => {
      const c = a[2].startsWith("queue.") ? queue : other;
      c.snapshots++;
      c.snapshotBytes += a[3].data.length;
      return store.saveSnapshot(...a);
    },
  });
}

const { srv, auth: ownerAuth, close } = await startProbeServer("fanout-probe", counting);
const aborts: AbortController[] = [];
try {
  const url = srv.url;
  const bots = await createBots(url, ownerAuth, USERS - 1, "fo");
  const users: BenchUser[] = [
    { userId: srv.bootstrapped!.userId!, email: PROBE_OWNER.email, auth: ownerAuth },
    ...bots,
  ];
  const channelId = await channelWith(
    url,
    ownerAuth,
    "probe fan-out",
    users.map((u) => u.userId),
  );
  const queues = await pool(users, 16, async (user) => {
    const r = await api(url, user.auth, "POST", "/register", { event_types: ["message"] });
    return { user, id: r.queue_id as string, last: r.last_event_id as number };
  });
  /** Park every queue's poll; resolves with each answer's event ids. */
  const park = () =>
    queues
      .map(async (q) => {
        const ac = new AbortController();
        aborts.push(ac);
        const r = await fetch(
          `${url}/api/v1/events?queue_id=${encodeURIComponent(q.id)}&last_event_id=${q.last}`,
          { headers: { authorization: q.user.auth }, signal: ac.signal },
        );
        const body = (await r.json()) as { events?: { id: number; type: string }[] };
        for (const e of body.events ?? []) q.last = Math.max(q.last, e.id);
        return (body.events ?? []).filter((e) => e.type === "message").length;
      })
      .map((p) => p.catch(() => 0));
  const settle = () => new Promise((r) => setTimeout(r, 1500 + USERS));

  // A warm-up round, so that what follows is the steady state of online users.
  const send = (n: number) =>
    api(url, ownerAuth, "POST", "/messages", {
      type: "stream",
      to: String(channelId),
      topic: "probe",
      content: `round ${n}`,
    });
  let polls = park();
  await settle();
  await send(0);
  await Promise.all(polls);

  polls = park();
  await settle();
  queue = zero();
  other = zero();
  const session = PROFILE ? new Session() : null;
  if (session) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  await send(1);
  const got = (await Promise.all(polls)).reduce((a, b) => a + b, 0);
  if (session) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(PROFILE!, JSON.stringify(profile));
    session.disconnect();
  }
  const delivery = { queue, other };
  if (got !== USERS) throw new Error(`${got} of ${USERS} polls got the message`);

  // The polls that acknowledge it (and park again).
  queue = zero();
  other = zero();
  polls = park();
  await settle();
  const acks = { queue, other };

  const per = (n: number) => (n / USERS).toFixed(3);
  const line = (label: string, c: Counts) =>
    `${label.padEnd(44)} ${per(c.calls).padStart(7)} ${per(c.entries).padStart(7)} ${per(c.bytes).padStart(9)} ${per(c.snapshots).padStart(7)} ${per(c.snapshotBytes).padStart(9)}`;
  console.log(`one message to ${USERS} users with a parked poll, embedded; per delivered event per user:`);
  console.log(
    `${"".padEnd(44)} ${"calls".padStart(7)} ${"entries".padStart(7)} ${"bytes".padStart(9)} ${"snaps".padStart(7)} ${"snap B".padStart(9)}`,
  );
  console.log(line("delivery: queue kind (queues, shard logs)", delivery.queue));
  console.log(line("delivery: other kinds (send, flags)", delivery.other));
  console.log(line("acknowledging poll: queue kind", acks.queue));
  console.log(line("acknowledging poll: other kinds", acks.other));
  const total = (c: Counts) =>
    `${c.calls} store calls, ${c.entries} entries, ${c.bytes} bytes, ${c.snapshots} snapshots`;
  console.log(`totals, delivery: queue kind ${total(delivery.queue)}; other kinds ${total(delivery.other)}`);
  console.log(
    `totals, acknowledging polls: queue kind ${total(acks.queue)}; other kinds ${total(acks.other)}`,
  );
  const { local, inline } = srv.router.stats;
  console.log(`router: ${local} local deliveries in all, ${inline} of them decided at once (inline)`);
} finally {
  for (const ac of aborts) ac.abort();
  await close();
}
