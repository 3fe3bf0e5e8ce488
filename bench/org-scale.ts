// Does per-request work grow with the organization? One embedded server
// (in this process, rate limit off) grows to each size in turn; at each,
// (a) the rate of creating bots and (b) the rate of sends to a channel with
// one subscriber. Nothing of either should depend on the organization's
// size, so the last size's figures are printed as ratios to the first's.
//
//   npx tsx bench/org-scale.ts [--sizes 100,1000,5000] [--seconds 3]
import { startEmbedded, type EmbeddedHandle } from "../test/support/embedded.ts";

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const sizes = arg("sizes", "100,1000,5000").split(",").map(Number);
const seconds = Number(arg("seconds", "3"));
const CONCURRENCY = 8;
const BATCH = 100;

async function must(h: EmbeddedHandle, method: string, path: string, params: Record<string, unknown>) {
  const r = await h.api(method, path, params);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Record<string, unknown>;
}

let botSeq = 0;
/** Creates `n` bots with CONCURRENCY requests in flight; returns bots per second. */
async function createBots(h: EmbeddedHandle, n: number): Promise<number> {
  let left = n;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) {
        const i = ++botSeq;
        await must(h, "POST", "/bots", { full_name: `Scale Bot ${i}`, short_name: `scale${i}` });
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

/** Sends for `seconds` with CONCURRENCY requests in flight; returns sends per second. */
async function sendRate(h: EmbeddedHandle, channel: string): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let count = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await must(h, "POST", "/messages", { type: "stream", to: channel, topic: "t", content: "hello" });
        count++;
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

const h = await startEmbedded();
try {
  await must(h, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "solo" }] });
  // Users already there: the owner (and nobody else) before the first batch.
  let have = 1;
  const rows: { size: number; create: number; send: number }[] = [];
  for (const size of sizes) {
    if (size - BATCH > have) {
      await createBots(h, size - BATCH - have);
      have = size - BATCH;
    }
    const create = await createBots(h, size - have);
    have = size;
    await sendRate(h, "solo"); // warm-up
    const send = await sendRate(h, "solo");
    rows.push({ size, create, send });
    console.log(
      `${size} users: ${create.toFixed(1)} bots/s created, ${send.toFixed(1)} sends/s (1 subscriber)`,
    );
  }
  const a = rows[0]!;
  const b = rows[rows.length - 1]!;
  console.log(
    `ratio ${b.size} vs ${a.size}: bot creation ${(b.create / a.create).toFixed(2)}×, send ${(b.send / a.send).toFixed(2)}×`,
  );
} finally {
  await h.stop();
}
