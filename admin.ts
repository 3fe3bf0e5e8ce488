// `npm run admin -- <command>`: ask a gateway's admin API (docs/operations.md
// "Admin API and placement page") and print tables.
//   ADMIN_URL     the gateway (or embedded server), default http://127.0.0.1:9991
//   ADMIN_TOKEN   the cluster's admin token (Bearer), or else
//   ADMIN_EMAIL + ADMIN_API_KEY   an organization owner's credentials (Basic)
// First: stack traces name the TypeScript sources (see there).
import "./cluster/source-maps.ts";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

const USAGE = `usage: npm run admin -- <command> [--json]
  nodes                          live nodes: shards, actors, queues, polls, mailboxes, memory
  shards                         shard -> node table, and shards per node
  where KIND KEY [--realm N]     where one actor lives, e.g. "where user 12"
  top [--limit N]                deepest mailboxes in the cluster
environment: ADMIN_URL (default http://127.0.0.1:9991), ADMIN_TOKEN, or ADMIN_EMAIL + ADMIN_API_KEY`;

type Json = Record<string, unknown>;

function authHeader(): string {
  const token = process.env.ADMIN_TOKEN;
  if (token) return `Bearer ${token}`;
  const email = process.env.ADMIN_EMAIL;
  const key = process.env.ADMIN_API_KEY;
  if (email && key) return `Basic ${Buffer.from(`${email}:${key}`).toString("base64")}`;
  throw new Error("set ADMIN_TOKEN, or ADMIN_EMAIL and ADMIN_API_KEY");
}

async function get(path: string, query: Record<string, string> = {}): Promise<Json> {
  const base = (process.env.ADMIN_URL || "http://127.0.0.1:9991").replace(/\/+$/, "");
  const qs = new URLSearchParams(query).toString();
  const res = await fetch(`${base}/api/v1/admin${path}${qs ? `?${qs}` : ""}`, {
    headers: { authorization: authHeader() },
  });
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    throw new Error(`${res.status} ${res.statusText}: ${text.slice(0, 200)}`);
  }
  if (!res.ok || body.result !== "success") throw new Error(`${res.status}: ${String(body.msg ?? text)}`);
  return body;
}

/** Columns padded to their widest cell. */
export function table(head: string[], rows: (string | number | null | boolean)[][]): string {
  const cells = [head, ...rows.map((r) => r.map((c) => (c === null ? "-" : String(c))))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function mb(bytes: unknown): string {
  return typeof bytes === "number" ? (bytes / 1024 / 1024).toFixed(1) : "-";
}

/** Compact shard list: 0-3,7,9-10. */
function ranges(ns: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ns.length;) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j]! + 1) j++;
    out.push(i === j ? String(ns[i]) : `${ns[i]}-${ns[j]}`);
    i = j + 1;
  }
  return out.join(",");
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      realm: { type: "string" },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const [cmd, ...rest] = positionals;
  if (values.help || !cmd) {
    console.log(USAGE);
    process.exitCode = cmd || values.help ? 0 : 2;
    return;
  }
  const print = (body: Json, text: () => string) =>
    console.log(values.json ? JSON.stringify(body, null, 2) : text());

  switch (cmd) {
    case "nodes": {
      const body = await get("/nodes");
      const nodes = body.nodes as Json[];
      print(body, () =>
        table(
          [
            "NODE",
            "STATE",
            "SHARDS",
            "ACTORS",
            "QUEUES",
            "POLLS",
            "MAILBOX",
            "MAILBOX MAX",
            "HEAP MB",
            "RSS MB",
          ],
          nodes.map((n) => [
            n.id as string,
            !n.reachable ? "unreachable" : n.draining ? "draining" : n.overloaded ? "overloaded" : "live",
            (n.shard_count as number) ?? null,
            (n.actors as number) ?? null,
            (n.event_queues as number) ?? null,
            (n.parked_polls as number) ?? null,
            (n.mailbox_queued as number) ?? null,
            (n.mailbox_max as number) ?? null,
            mb(n.heap_used_bytes),
            mb(n.rss_bytes),
          ]),
        ),
      );
      return;
    }
    case "shards": {
      const body = await get("/shards");
      const shards = body.shards as {
        shard: number;
        node: string | null;
        epoch: number | null;
        expected_node: string | null;
      }[];
      const byNode = body.by_node as Record<string, number[]>;
      print(body, () => {
        const t = table(
          ["SHARD", "NODE", "EPOCH", "EXPECTED"],
          shards.map((s) => [s.shard, s.node ?? "unserved", s.epoch, s.expected_node]),
        );
        const summary = table(
          ["NODE", "COUNT", "SHARDS"],
          Object.keys(byNode)
            .sort()
            .map((n) => [n, byNode[n]!.length, ranges(byNode[n]!)]),
        );
        return `${t}\n\n${summary}`;
      });
      return;
    }
    case "where": {
      const [kind, key] = rest;
      if (!kind || !key) throw new Error("usage: where KIND KEY [--realm N]");
      const q: Record<string, string> = { kind, key };
      if (values.realm !== undefined) q.realm = values.realm;
      const body = await get("/where", q);
      print(body, () =>
        table(
          ["KIND", "REALM", "KEY", "SHARD", "NODE", "EPOCH", "ACTIVE", "MAILBOX", "EXPECTED"],
          [
            [
              body.kind as string,
              body.realm as number,
              body.key as string,
              body.shard as number,
              (body.node as string | null) ?? "unserved",
              body.epoch as number | null,
              body.active ? "yes" : "no",
              body.mailbox_depth as number,
              body.expected_node as string | null,
            ],
          ],
        ),
      );
      return;
    }
    case "top": {
      const q: Record<string, string> = {};
      if (values.limit !== undefined) q.limit = values.limit;
      const body = await get("/top", q);
      const rows = body.mailboxes as Json[];
      print(body, () =>
        rows.length === 0
          ? "no waiting turns in any mailbox"
          : table(
              ["NODE", "KIND", "REALM", "KEY", "SHARD", "DEPTH"],
              rows.map((m) => [
                m.node as string,
                m.kind as string,
                m.realm as number,
                m.key as string,
                m.shard as number,
                m.depth as number,
              ]),
            ),
      );
      return;
    }
    default:
      console.error(`unknown command: ${cmd}\n${USAGE}`);
      process.exitCode = 2;
  }
}

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  main().catch((err: Error) => {
    console.error(`admin: ${err.message}`);
    process.exitCode = 1;
  });
}
