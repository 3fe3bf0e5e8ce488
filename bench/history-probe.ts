// History probe: does a channel's first GET /messages after a start, and the
// server's memory, depend on how many messages the channel ever had?
//
//   node --import tsx bench/history-probe.ts [big=1000000] [small=1000]
//
// For each size: an embedded server on a fresh data dir creates the
// organization and one channel with one message, and stops. The channel's
// history is then written straight into the LMDB store in the layout the
// conversation uses (actors/channel/conversation-state.ts: a record per
// message, the conversation's and each topic's id index, written with
// `addWrites` in appends of 10,000 messages under the shard's lease), with
// message ids from the realm's message counter, and the conversation's
// snapshot (`convToSnapshot` of the state those messages fold into). No
// HTTP, no journal: seeding a million messages over the API would take
// hours. A fresh server process then starts on the data dir and the probe
// times its first `GET /messages` (anchor=newest, num_before=100, the
// channel's narrow), which activates the conversation, and reads the
// process's RSS after it. Each measurement runs in its own process, five
// times; the figures are the medians.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SHARDS = 16;
const BATCH = 10_000;
const TOPICS = 100;
const RUNS = 5;

interface Measure {
  firstMs: number;
  secondMs: number;
  rssMb: number;
}
const self = new URL(import.meta.url).pathname;

function bootstrapConfig() {
  return {
    ownerEmail: "owner@example.com",
    ownerPassword: "owner-password-1",
    ownerName: "Olivia Owner",
    realmName: "Probe Org",
    externalHost: "localhost",
  };
}

async function server(dir: string) {
  const { startEmbedded } = await import("../server.ts");
  process.env.RATE_LIMIT_PER_MINUTE = "0";
  return startEmbedded({
    port: 0,
    host: "127.0.0.1",
    dataDir: dir,
    shards: SHARDS,
    bootstrap: bootstrapConfig(),
    singleOrganization: true,
    leaseTtlMs: 1_000,
    renewMs: 200,
  });
}

/** Child: the organization and the channel, over HTTP. Prints {apiKey, realmId, streamId}. */
async function setup(dir: string): Promise<void> {
  const { makeApi } = await import("../test/support/embedded.ts");
  const srv = await server(dir);
  const apiKey = srv.bootstrapped!.apiKey!;
  const api = makeApi(srv.url, { email: "owner@example.com", apiKey });
  await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: "history" }] });
  const streamId = (await api("GET", "/get_stream_id", { stream: "history" })).body.stream_id as number;
  await api("POST", "/messages", { type: "stream", to: "history", topic: "t0", content: "first" });
  const realmId = srv.bootstrapped!.realmId!;
  await srv.close();
  console.log(JSON.stringify({ apiKey, realmId, streamId }));
}

/** Child: `n` more messages straight into the store, and the conversation's snapshot. */
async function seed(dir: string, realmId: number, streamId: number, n: number): Promise<void> {
  const { createLmdbStore } = await import("../cluster/storage/lmdb-store.ts");
  const { actorId, shardOf } = await import("../cluster/addressing.ts");
  const conv = await import("../actors/channel/conversation-state.ts");
  const store = createLmdbStore(dir);
  const ref = { kind: "channel" as const, realm: realmId, key: String(streamId) };
  const shard = shardOf(ref, SHARDS);
  const id = actorId(ref);
  let epoch: number | null = null;
  while (epoch === null) {
    epoch = await store.acquireLease(shard, "probe", 600_000);
    if (epoch === null) await new Promise((r) => setTimeout(r, 200));
  }
  const snap = await store.loadSnapshot(shard, id);
  // A snapshot with pending outbox entries is an envelope (cluster/catalog/snapshots.ts): the state is inside.
  const data = snap?.data.startsWith("\u0001")
    ? (JSON.parse(snap.data.slice(1)) as { s: string }).s
    : snap?.data;
  let state = data !== undefined ? conv.convFromSnapshot(data, ref) : conv.initialConv(ref);
  let seq = snap?.seq ?? 0;
  for (const e of await store.readJournal(shard, id, seq)) seq = e.seq;
  if (snap === null || seq > snap.seq) {
    // The one message sent over HTTP may still be in the journal: fold it in.
    const { decodeFact } = await import("../proto/codec.ts");
    for (const e of await store.readJournal(shard, id, snap?.seq ?? 0)) {
      const f = decodeFact(e.data);
      if (typeof f.type === "string") state = conv.applyConvFact(state, f);
    }
  }
  const now = Math.floor(Date.now() / 1000);
  for (let done = 0; done < n;) {
    const msgs = [];
    for (let k = 0; k < BATCH && done < n; k++, done++) {
      const mid = await store.nextId(`message.${realmId}`);
      const content = `history message ${done} with a few words of text`;
      msgs.push({
        id: mid,
        senderId: 8 + (done % 5),
        senderEmail: `u${done % 5}@example.com`,
        senderName: `User ${done % 5}`,
        senderAvatarVersion: 1,
        client: "probe",
        content,
        rendered: `<p>${content}</p>`,
        topic: `topic ${done % TOPICS}`,
        topicLinks: [],
        timestamp: now,
        reactions: [],
        lastEditTimestamp: null,
        lastMovedTimestamp: null,
        editHistory: [],
        mentioned: [],
        isMe: false,
      });
    }
    await store.append(shard, epoch, id, seq + 1, [], conv.addWrites(state, msgs));
    for (const msg of msgs)
      state = conv.applyConvFact(state, { type: "msgAdded", msg, stored: true } as never);
  }
  await store.saveSnapshot(shard, epoch, id, { seq, data: conv.convToSnapshot(state) });
  await store.releaseLease(shard, "probe", epoch);
  await store.close();
  console.log(JSON.stringify({ count: state.count }));
}

/** Child: start, time the first channel fetch, report RSS. */
async function measure(dir: string, apiKey: string, streamId: number): Promise<void> {
  const { makeApi } = await import("../test/support/embedded.ts");
  const srv = await server(dir);
  const api = makeApi(srv.url, { email: "owner@example.com", apiKey });
  const narrow = JSON.stringify([{ operator: "channel", operand: streamId }]);
  const q = { anchor: "newest", num_before: 100, num_after: 0, narrow };
  const t0 = performance.now();
  const r = await api("GET", "/messages", q);
  const firstMs = performance.now() - t0;
  if (r.status !== 200 || (r.body.messages as unknown[]).length !== 100)
    throw new Error(`fetch failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  const t1 = performance.now();
  await api("GET", "/messages", q);
  const secondMs = performance.now() - t1;
  global.gc?.();
  const rssMb = process.memoryUsage().rss / 1048576;
  await srv.close();
  console.log(JSON.stringify({ firstMs, secondMs, rssMb }));
}

function child(args: string[], nodeFlags: string[] = []): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...nodeFlags, "--import", "tsx", self, ...args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.on("exit", (code) => {
      const last = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0) reject(new Error(`${args[0]} exited ${code}: ${out.slice(-500)}`));
      else resolve(JSON.parse(last) as Record<string, unknown>);
    });
  });
}

async function probe(n: number) {
  const dir = mkdtempSync(join(tmpdir(), "history-probe-"));
  try {
    const s = await child(["setup", dir]);
    const t0 = performance.now();
    await child(["seed", dir, String(s.realmId), String(s.streamId), String(n - 1)]);
    const seedS = (performance.now() - t0) / 1000;
    // The machine may be shared: each figure is the median of RUNS fresh starts.
    const runs: Measure[] = [];
    for (let i = 0; i < RUNS; i++)
      runs.push(
        (await child(
          ["measure", dir, String(s.apiKey), String(s.streamId)],
          ["--expose-gc"],
        )) as unknown as Measure,
      );
    const median = (k: keyof Measure) => runs.map((r) => r[k]).sort((x, y) => x - y)[RUNS >> 1]!;
    return { n, seedS, firstMs: median("firstMs"), secondMs: median("secondMs"), rssMb: median("rssMb") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "setup") await setup(rest[0]!);
else if (mode === "seed") await seed(rest[0]!, Number(rest[1]), Number(rest[2]), Number(rest[3]));
else if (mode === "measure") await measure(rest[0]!, rest[1]!, Number(rest[2]));
else {
  const big = Number(mode ?? 1_000_000);
  const small = Number(rest[0] ?? 1_000);
  const a = await probe(small);
  const b = await probe(big);
  const fmt = (x: typeof a) =>
    `${String(x.n).padStart(9)} messages: first GET /messages ${x.firstMs.toFixed(1)} ms ` +
    `(second ${x.secondMs.toFixed(1)} ms), RSS ${x.rssMb.toFixed(0)} MB, seeded in ${x.seedS.toFixed(0)} s`;
  console.log(fmt(a));
  console.log(fmt(b));
  console.log(
    `ratio ${b.n}/${a.n}: first fetch ${(b.firstMs / a.firstMs).toFixed(2)}x, RSS ${(b.rssMb / a.rssMb).toFixed(2)}x`,
  );
}
process.exit(0);
