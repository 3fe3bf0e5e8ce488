// The write figure: PATCH /settings (a journaled user-actor turn) in
// embedded and cluster mode, as a ratio to bare Fastify form-POST.
import { ownerAuth } from "./client.ts";
import { load } from "./load.ts";
import { startServers } from "./servers.ts";
import { atLeast, type BenchContext, type BenchRow } from "./table.ts";

const TARGETS = { embedded: 0.35, cluster: 0.15 };

export async function run(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const m of ["embedded", "cluster"] as const) {
    const srv = await startServers(m);
    try {
      const owner = await ownerAuth(srv.url);
      // Alternate two values so every request is a real change (PATCH
      // /settings saves and events only values that differ).
      let flip = false;
      const f = await load({
        url: `${srv.url}/api/v1/settings`,
        method: "PATCH",
        connections: ctx.connections,
        duration: ctx.duration,
        headers: { authorization: owner.auth },
        body: () => {
          flip = !flip;
          return `enter_sends=${flip}&web_font_size_px=${flip ? 15 : 16}`;
        },
      });
      const base = await ctx.baseline("post");
      const ratio = f.rps / base.rps;
      const tag = m === "embedded" ? "embedded" : "cluster (2 nodes, 1 gateway)";
      rows.push(
        {
          section: "write",
          name: `PATCH /settings, ${tag}: req/s`,
          value: f.rps,
          unit: "req/s",
          ratio,
          ...atLeast(ratio, TARGETS[m], (n) => `${n}×`),
          note: f.failed ? `${f.failed} of ${f.total} requests failed` : undefined,
        },
        {
          section: "write",
          name: `PATCH /settings, ${tag}: p99`,
          value: f.p99,
          unit: "ms",
          ratio: f.p99 / Math.max(base.p99, 1),
        },
      );
    } finally {
      await srv.stop();
    }
  }
  return rows;
}
