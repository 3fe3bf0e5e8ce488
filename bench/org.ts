// Does a request's cost grow with the organization (issue 17, point 5)?
// One embedded server grows to each size of BENCH_ORG_SIZES (default
// 1,000 and 10,000 users, bots as filler); at each size, measured: creating
// BENCH_ORG_BOTS bots (POST /bots), creating BENCH_ORG_HUMANS users (POST
// /users, each with a password hash of constant cost), and sends to a
// channel with one subscriber for BENCH_ORG_SECONDS. Nothing of these
// should depend on the organization's size, so each figure at the largest
// size is printed as a ratio to the same figure at the smallest, measured in
// the same run on the same server.
import { api, ownerAuth, pool, type Auth } from "./client.ts";
import { startServers } from "./servers.ts";
import { atLeast, type BenchContext, type BenchRow } from "./table.ts";

const SIZES = (process.env.BENCH_ORG_SIZES ?? "1000,10000").split(",").map(Number);
const BOTS = Number(process.env.BENCH_ORG_BOTS ?? 300);
const HUMANS = Number(process.env.BENCH_ORG_HUMANS ?? 100);
const SECONDS = Number(process.env.BENCH_ORG_SECONDS ?? 5);
const IN_FLIGHT = 8;
/** A figure at the largest size ÷ at the smallest: "costs the same", with room for this machine's noise. */
const SAME = 0.8;

interface Figures {
  size: number;
  bots: number;
  humans: number;
  sends: number;
}

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const servers = await startServers("embedded");
  try {
    const url = servers.url;
    const { auth } = await ownerAuth(url);
    await api(url, auth, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "org-solo" }] });
    let made = 0;
    const bots = async (n: number): Promise<number> => {
      const t0 = performance.now();
      await pool(Array.from({ length: n }), IN_FLIGHT, async () => {
        const i = ++made;
        await api(url, auth, "POST", "/bots", { full_name: `Org Bot ${i}`, short_name: `org-bot-${i}` });
      });
      return n / ((performance.now() - t0) / 1000);
    };
    const humans = async (n: number): Promise<number> => {
      const t0 = performance.now();
      await pool(Array.from({ length: n }), IN_FLIGHT, async () => {
        const i = ++made;
        await api(url, auth, "POST", "/users", {
          email: `org-user-${i}@example.com`,
          password: `org-password-${i}`,
          full_name: `Org User ${i}`,
        });
      });
      return n / ((performance.now() - t0) / 1000);
    };
    const sends = (seconds: number): Promise<number> => sendRate(url, auth, seconds);

    // The owner, and nobody else, before the first size.
    let have = 1;
    const rows: Figures[] = [];
    for (const size of SIZES) {
      const filler = size - BOTS - HUMANS - have;
      if (filler > 0) {
        ctx.log(`org: ${filler} bots to reach ${size - BOTS - HUMANS} users`);
        await bots(filler);
        have += filler;
      }
      const f: Figures = { size, bots: await bots(BOTS), humans: await humans(HUMANS), sends: 0 };
      have += BOTS + HUMANS;
      await sends(1); // warm-up
      f.sends = await sends(SECONDS);
      ctx.log(
        `org: ${have} users: ${f.bots.toFixed(0)} bots/s, ${f.humans.toFixed(1)} users/s, ${f.sends.toFixed(0)} sends/s`,
      );
      rows.push(f);
    }
    const a = rows[0]!;
    const b = rows[rows.length - 1]!;
    const out: BenchRow[] = [];
    const fmt = (x: number) => `${x.toFixed(1)}×`;
    const add = (what: string, unit: string, pick: (f: Figures) => number) => {
      for (const f of rows)
        out.push({ section: "org", name: `${what} at ${f.size} users`, value: pick(f), unit, ratio: null });
      const ratio = pick(b) / pick(a);
      out.push({
        section: "org",
        name: `${what}: ${b.size} users ÷ ${a.size}`,
        value: ratio,
        unit: "×",
        ratio,
        ...atLeast(ratio, SAME, fmt),
      });
    };
    add("creating bots (POST /bots)", "bots/s", (f) => f.bots);
    add("creating users (POST /users)", "users/s", (f) => f.humans);
    add("sends to a 1-subscriber channel", "req/s", (f) => f.sends);
    return out;
  } finally {
    await servers.stop();
  }
}

async function sendRate(url: string, auth: Auth, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let count = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await api(url, auth, "POST", "/messages", {
          type: "stream",
          to: "org-solo",
          topic: "t",
          content: "hi",
        });
        count++;
      }
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}
