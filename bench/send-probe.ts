// A probe of what a channel send costs per subscriber: an embedded server
// in this process, generic bots as subscribers, sends over HTTP, 4 in
// flight. Prints
// sends/s for each channel size (BENCH_SEND_SIZES, default 1,1000) and the
// ratio to the first; with SEND_PROBE_PROFILE=<file> also writes a CPU
// profile of the timed sends of the largest size. `npx tsx bench/send-probe.ts`
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbedded } from "../cluster/compose/embedded.ts";
import { api as call, basic } from "./client.ts";

const SIZES = (process.env.BENCH_SEND_SIZES ?? "1,1000").split(",").map(Number);
const SENDS = Number(process.env.SEND_PROBE_SENDS ?? 400);
const PROFILE = process.env.SEND_PROBE_PROFILE;

// Rate limits off, as the bench servers run (bench/servers.ts).
process.env.RATE_LIMIT_PER_MINUTE ??= "0";
const dir = mkdtempSync(join(tmpdir(), "send-probe-"));
const srv = await startEmbedded({
  port: 0,
  host: "127.0.0.1",
  dataDir: dir,
  shards: 16,
  bootstrap: {
    ownerEmail: "owner@example.com",
    ownerPassword: "owner-password-1",
    ownerName: "Owner",
    realmName: "Probe",
    externalHost: "localhost",
  },
});
try {
  const ownerId = srv.bootstrapped!.userId!;
  const auth = basic("owner@example.com", srv.bootstrapped!.apiKey!);
  const api = (method: string, path: string, params: Record<string, unknown> = {}) =>
    call(srv.url, auth, method, path, params);
  const users: number[] = [];
  const need = Math.max(...SIZES) - 1;
  // Generic bots: no password hash to compute.
  let made = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (made < need) {
        const i = made++;
        const r = await api("POST", "/bots", { full_name: `Probe ${i}`, short_name: `probe-${i}` });
        users.push(r.user_id as number);
      }
    }),
  );
  const rates: number[] = [];
  for (const size of SIZES) {
    const name = `probe ${size}`;
    const members = [ownerId, ...users.slice(0, size - 1)];
    for (let i = 0; i < members.length; i += 500)
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: members.slice(i, i + 500),
      });
    const id = (await api("GET", `/get_stream_id?stream=${encodeURIComponent(name)}`, {}))
      .stream_id as number;
    const send = (n: number) =>
      api("POST", "/messages", { type: "stream", to: String(id), topic: "probe", content: `m ${n}` });
    for (let i = 0; i < 50; i++) await send(i);
    const session = PROFILE && size === Math.max(...SIZES) ? new Session() : null;
    if (session) {
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    }
    const t = performance.now();
    // 4 in flight, as the bench's 4 senders.
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < SENDS) await send(next++);
      }),
    );
    const rate = (SENDS / (performance.now() - t)) * 1000;
    if (session) {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(PROFILE!, JSON.stringify(profile));
      session.disconnect();
    }
    rates.push(rate);
    console.log(`${size} subscribers: ${rate.toFixed(0)} sends/s, ${(rate / rates[0]!).toFixed(3)}x`);
  }
} finally {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
}
