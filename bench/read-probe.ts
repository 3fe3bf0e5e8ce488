// A probe of what one channel GET /messages (anchor newest, 100 before, the
// channel's narrow) costs: an embedded server in this process, one channel
// of READ_PROBE_HISTORY messages (default 2,000) sent over HTTP. Prints the
// actor requests one read makes, by kind and method (counted at the
// catalog: a turn in the mailbox, or a reader beside it), then the time of
// READ_PROBE_READS reads (default 400, 8 in flight) alone and while 4
// connections send to the same channel; with READ_PROBE_PROFILE=<file> also
// writes a CPU profile of the idle reads. `npx tsx bench/read-probe.ts`
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { Catalog } from "../cluster/catalog.ts";
import { api as call } from "./client.ts";
import { startProbeServer } from "./probe-server.ts";
import type { Behavior } from "../actors/types.ts";

const HISTORY = Number(process.env.READ_PROBE_HISTORY ?? 2000);
const READS = Number(process.env.READ_PROBE_READS ?? 400);
const PROFILE = process.env.READ_PROBE_PROFILE;

// Every request an actor receives, as "kind.method" (reader or turn).
const counts = new Map<string, number>();
let counting = false;
const send = Catalog.prototype.send;
Catalog.prototype.send = function (this: Catalog, ref, shard, epoch, method, ...rest) {
  if (counting) {
    const behaviors = (this as unknown as { c: { o: { behaviors: Record<string, Behavior<unknown>> } } }).c.o
      .behaviors;
    const how = behaviors[ref.kind]?.readers?.includes(method) ? "reader" : "turn";
    const key = `${ref.kind}.${method} (${how})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return send.call(this, ref, shard, epoch, method, ...rest);
};

const { srv, auth, close } = await startProbeServer("read-probe");
try {
  const api = (method: string, path: string, params: Record<string, unknown> = {}) =>
    call(srv.url, auth, method, path, params);
  await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: "probe" }] });
  const id = (await api("GET", "/get_stream_id", { stream: "probe" })).stream_id as number;
  let n = 0;
  const sendOne = () =>
    api("POST", "/messages", { type: "stream", to: String(id), topic: `t${n % 50}`, content: `m ${n++}` });
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (n < HISTORY) await sendOne();
    }),
  );
  const narrow = JSON.stringify([{ operator: "channel", operand: id }]);
  const read = async () => {
    const r = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow });
    if ((r.messages as unknown[]).length !== 100) throw new Error("short read");
  };
  // Warm: activations, caches.
  for (let i = 0; i < 20; i++) await read();

  counting = true;
  await read();
  counting = false;
  console.log("actor requests of one GET /messages:");
  for (const [k, v] of [...counts].sort()) console.log(`  ${k}: ${v}`);

  const burst = async () => {
    let next = 0;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < READS) await read();
      }),
    );
    return performance.now() - t;
  };
  const cpu0 = process.cpuUsage();
  const session = PROFILE ? new Session() : null;
  if (session) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
  }
  const idleMs = await burst();
  if (session) {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(PROFILE!, JSON.stringify(profile));
    session.disconnect();
  }
  const cpu = process.cpuUsage(cpu0);
  const cpuPerRead = (cpu.user + cpu.system) / 1000 / READS;
  console.log(
    `idle: ${((READS / idleMs) * 1000).toFixed(0)} reads/s, ${cpuPerRead.toFixed(2)} ms CPU per read (whole process)`,
  );
  // The same reads while 4 connections send to the channel.
  let sending = true;
  const senders = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (sending) await sendOne();
    }),
  );
  const busyMs = await burst();
  sending = false;
  await senders;
  console.log(
    `with 4 senders: ${((READS / busyMs) * 1000).toFixed(0)} reads/s, ${(idleMs / busyMs).toFixed(2)}x idle`,
  );
} finally {
  await close();
}
