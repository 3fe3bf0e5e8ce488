// A probe of what a channel send costs per subscriber: an embedded server
// in this process, generic bots as subscribers, sends over HTTP, 4 in
// flight. Prints
// sends/s for each channel size (BENCH_SEND_SIZES, default 1,1000) and the
// ratio to the first; with SEND_PROBE_PROFILE=<file> also writes a CPU
// profile of the timed sends of the largest size. `npx tsx bench/send-probe.ts`
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { api as call } from "./client.ts";
import { startProbeServer } from "./probe-server.ts";

const SIZES = (process.env.BENCH_SEND_SIZES ?? "1,1000").split(",").map(Number);
const SENDS = Number(process.env.SEND_PROBE_SENDS ?? 400);
const PROFILE = process.env.SEND_PROBE_PROFILE;

const { srv, auth, ownerId, close } = await startProbeServer("send-probe");
try {
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
  await close();
}
