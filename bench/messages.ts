// POST /messages to channels of 1, 1,000 and 10,000 subscribers (none
// online; BENCH_SEND_SIZES), each as a ratio to the 1-subscriber rate and to
// bare Fastify, in embedded and cluster mode (cluster also as a ratio to
// embedded); and GET /messages (channel narrow, anchor newest, 100 before)
// in a channel holding up to 100,000 messages, as a ratio to bare Fastify
// serving the same answer from memory, alone and while SENDERS write to the
// same channel. All in the same run.
import { api, channelWith, createBots, ownerAuth, pool } from "./client.ts";
import { load, type LoadSpec } from "./load.ts";
import { startProc } from "./procs.ts";
import { startServers } from "./servers.ts";
import type { BenchContext, BenchRow } from "./table.ts";

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const HISTORY = Number(process.env.BENCH_HISTORY ?? 100_000);
const SENDERS = Number(process.env.BENCH_SENDERS ?? 4);
const SEED_SECONDS = Number(process.env.BENCH_SEED_SECONDS ?? 360);
const MODES = (process.env.BENCH_MESSAGE_MODES ?? "embedded,cluster").split(",") as (
  "embedded" | "cluster"
)[];

/**
 * Send up to `n` messages, 16 in flight, for at most SEED_SECONDS (about
 * 370 sends/s in embedded mode on the 2-core machine, so 100,000 take about
 * 4.5 minutes); the figure names the count reached.
 */
async function seedMessages(
  url: string,
  auth: string,
  channelId: number,
  n: number,
): Promise<{ sent: number; failed: number }> {
  const until = Date.now() + SEED_SECONDS * 1000;
  let next = 0;
  let sent = 0;
  let failed = 0;
  await pool(Array.from({ length: 16 }), 16, async () => {
    while (next < n && Date.now() < until) {
      const i = next++;
      try {
        await api(url, auth, "POST", "/messages", {
          type: "stream",
          to: String(channelId),
          topic: `history ${i % 50}`,
          content: `seed message ${i}`,
        });
        sent++;
      } catch {
        // 503 (overload, deadline): counted, not fatal.
        failed++;
      }
    }
  });
  return { sent, failed };
}

/** Channel sizes of the send figures; the first is the reference the others are divided by. */
const SEND_SIZES = (process.env.BENCH_SEND_SIZES ?? `1,${SUBSCRIBERS},10000`)
  .split(",")
  .map(Number)
  .filter((n) => n >= 1);

/** Embedded send rate per channel size, for the cluster rows' ratio (this run only). */
const embeddedRate = new Map<number, number>();
/** Embedded history read rates (alone, with senders), for the cluster rows' ratio. */
const embeddedReads = new Map<"alone" | "senders", number>();

/**
 * Bare Fastify serving `body` (a GET /messages answer) from memory: the
 * read figures' reference. Measured while our server is up but idle.
 */
async function memoryBaseline(ctx: BenchContext, body: string): Promise<{ rps: number; p99: number }> {
  const p = await startProc("baseline", "bench/baseline.ts", { PORT: "0" }, /LISTENING (\d+)/);
  try {
    const url = `http://127.0.0.1:${p.match[1]}`;
    const res = await fetch(`${url}/api/v1/stash`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (!res.ok) throw new Error(`baseline stash: ${res.status}`);
    return await load({
      url: `${url}/api/v1/stash`,
      method: "GET",
      connections: ctx.connections,
      duration: ctx.duration,
    });
  } finally {
    await p.stop();
  }
}

async function mode(ctx: BenchContext, m: "embedded" | "cluster"): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const srv = await startServers(m);
  try {
    const { url } = srv;
    const owner = await ownerAuth(url);
    let t = Date.now();
    const biggest = Math.max(...SEND_SIZES);
    const bots = await createBots(url, owner.auth, biggest - 1, "msg");
    ctx.log(`${m}: ${bots.length} bots in ${Date.now() - t} ms`);
    const tag = m === "embedded" ? "embedded" : "cluster (2 nodes, 1 gateway)";
    const base = await ctx.baseline("post");
    let reference: number | null = null;
    for (const size of SEND_SIZES) {
      t = Date.now();
      const members = [owner.userId, ...bots.slice(0, size - 1).map((b) => b.userId)];
      const id = await channelWith(url, owner.auth, `bench fan-out ${size}`, members);
      ctx.log(`${m}: channel with ${size} subscribers in ${Date.now() - t} ms`);
      let n = 0;
      // Few senders: every send to this channel waits for the ones before it
      // (one channel actor, one turn at a time), so 50 connections only queue.
      const send = await load({
        url: `${url}/api/v1/messages`,
        method: "POST",
        connections: SENDERS,
        timeout: 30,
        duration: ctx.duration,
        headers: { authorization: owner.auth },
        body: () => `type=stream&to=${id}&topic=load&content=fan-out%20${n++}`,
      });
      // Wait out the load's backlog before the next size.
      await api(url, owner.auth, "POST", "/messages", {
        type: "stream",
        to: String(id),
        topic: "load",
        content: "drain",
      });
      reference ??= send.rps;
      if (m === "embedded") embeddedRate.set(size, send.rps);
      const toEmbedded = m === "cluster" ? embeddedRate.get(size) : undefined;
      const notes = [
        `${(send.rps / reference).toFixed(3)}x the ${SEND_SIZES[0]}-subscriber rate`,
        ...(toEmbedded ? [`${(send.rps / toEmbedded).toFixed(3)}x embedded`] : []),
        ...(send.failed ? [`${send.failed} of ${send.total} requests failed`] : []),
      ];
      rows.push(
        {
          section: "messages",
          name: `POST /messages, ${size} subscribers (none online), ${SENDERS} senders, ${tag}: req/s`,
          value: send.rps,
          unit: "req/s",
          ratio: send.rps / base.rps,
          note: notes.join("; "),
        },
        {
          section: "messages",
          name: `POST /messages, ${size} subscribers, ${SENDERS} senders, ${tag}: p99`,
          value: send.p99,
          unit: "ms",
          ratio: send.p99 / Math.max(base.p99, 1),
        },
      );
    }

    const history = (await api(url, owner.auth, "POST", "/channels/create", {
      name: "bench history",
      subscribers: [owner.userId],
    })) as { id: number };
    t = Date.now();
    const { sent: seeded, failed: seedFailed } = await seedMessages(url, owner.auth, history.id, HISTORY);
    const seedMs = Date.now() - t;
    ctx.log(`${m}: ${seeded} messages seeded in ${seedMs} ms (${seedFailed} failed)`);
    rows.push({
      section: "messages",
      name: `seed sends to a 1-subscriber channel (16 in flight) up to ${seeded} messages, ${tag}`,
      value: (seeded / seedMs) * 1000,
      unit: "msg/s",
      note:
        (seeded < HISTORY
          ? `seeding stopped at ${seeded} of ${HISTORY} messages after ${SEED_SECONDS} s (time box)`
          : `${seeded} messages`) + (seedFailed ? `; ${seedFailed} sends failed (503)` : ""),
    });
    const narrow = encodeURIComponent(JSON.stringify([{ operator: "channel", operand: history.id }]));
    const readSpec: LoadSpec = {
      url: `${url}/api/v1/messages?narrow=${narrow}&anchor=newest&num_before=100&num_after=0`,
      method: "GET",
      connections: ctx.connections,
      duration: ctx.duration,
      headers: { authorization: owner.auth },
    };
    const read = await load(readSpec);
    const getBase = await ctx.baseline("get");
    const answer = await fetch(readSpec.url, { headers: { authorization: owner.auth } });
    const memBase = await memoryBaseline(ctx, await answer.text());
    // The same reads while SENDERS connections send to the same channel.
    let k = 0;
    const [busyRead, busySend] = await Promise.all([
      load(readSpec),
      load({
        url: `${url}/api/v1/messages`,
        method: "POST",
        connections: SENDERS,
        timeout: 30,
        duration: ctx.duration,
        headers: { authorization: owner.auth },
        body: () => `type=stream&to=${history.id}&topic=busy&content=busy%20${k++}`,
      }),
    ]);
    if (m === "embedded") {
      embeddedReads.set("alone", read.rps);
      embeddedReads.set("senders", busyRead.rps);
    }
    const toEmbedded = (which: "alone" | "senders", rps: number) => {
      const e = m === "cluster" ? embeddedReads.get(which) : undefined;
      return e ? [`${(rps / e).toFixed(3)}x embedded`] : [];
    };
    rows.push(
      {
        section: "messages",
        name: `bare Fastify serving the same 100 messages' JSON from memory (${tag} run): req/s`,
        value: memBase.rps,
        unit: "req/s",
        ratio: memBase.rps / getBase.rps,
      },
      {
        section: "messages",
        name: `GET /messages, newest 100 of ${seeded}, ${tag}: x memory-JSON baseline`,
        value: read.rps / memBase.rps,
        unit: "x",
        target: "≥ 0.3×",
        pass: read.rps / memBase.rps >= 0.3,
        note: toEmbedded("alone", read.rps).join("; ") || undefined,
      },
      {
        section: "messages",
        name: `GET /messages, newest 100, while ${SENDERS} senders write to the channel, ${tag}: req/s`,
        value: busyRead.rps,
        unit: "req/s",
        ratio: busyRead.rps / getBase.rps,
        note: [
          `${(busyRead.rps / read.rps).toFixed(3)}x the reads alone`,
          `${(busyRead.rps / memBase.rps).toFixed(3)}x memory-JSON baseline`,
          ...toEmbedded("senders", busyRead.rps),
          `sends meanwhile ${busySend.rps.toFixed(0)}/s`,
          ...(busyRead.failed ? [`${busyRead.failed} of ${busyRead.total} reads failed`] : []),
          ...(busySend.failed ? [`${busySend.failed} of ${busySend.total} sends failed`] : []),
        ].join("; "),
      },
      {
        section: "messages",
        name: `GET /messages, newest 100, while ${SENDERS} senders write, ${tag}: p99`,
        value: busyRead.p99,
        unit: "ms",
        ratio: busyRead.p99 / Math.max(getBase.p99, 1),
      },
    );
    rows.push(
      {
        section: "messages",
        name: `GET /messages, newest 100 of ${seeded}, ${tag}: req/s`,
        value: read.rps,
        unit: "req/s",
        ratio: read.rps / getBase.rps,
        note: read.failed ? `${read.failed} of ${read.total} requests failed` : undefined,
      },
      {
        section: "messages",
        name: `GET /messages, newest 100 of ${seeded}, ${tag}: p99`,
        value: read.p99,
        unit: "ms",
        ratio: read.p99 / Math.max(getBase.p99, 1),
      },
    );
  } finally {
    await srv.stop();
  }
  return rows;
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const m of MODES) {
    try {
      rows.push(...(await mode(ctx, m)));
    } catch (err) {
      // Keep the other mode's figures.
      ctx.log(`messages, ${m}: ${(err as Error).stack ?? String(err)}`);
      rows.push({
        section: "messages",
        name: `${m} mode failed (see stderr)`,
        value: NaN,
        unit: "",
        pass: false,
      });
    }
  }
  return rows;
}
