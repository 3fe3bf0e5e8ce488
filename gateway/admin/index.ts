// Operations endpoints of a gateway (and of the embedded server):
//   GET /metrics                 Prometheus text (cluster/metrics.ts registry)
//   GET /api/v1/admin/nodes      live nodes with their actor, queue and memory figures
//   GET /api/v1/admin/shards     shard -> node table (as served, and as placement wants it)
//   GET /api/v1/admin/where      where one actor lives: kind, realm, key -> shard, node, active
//   GET /api/v1/admin/top        deepest mailboxes across the cluster
//   GET /admin/placement         a page that shows the shard map by node, live
// All but the page need admin credentials (auth.ts). The gateway asks every
// node over the bus (cluster/admin.ts) and merges the answers; docs/operations.md
// "Admin API and placement page" documents the shapes.

import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errors, ZulipError } from "../../actors/errors.ts";
import { toZulipError } from "../../cluster/runtime-errors.ts";
import { KINDS, type Kind } from "../../actors/types.ts";
import {
  AdminBusClient,
  adminRef,
  MAX_TOP,
  type ClusterView,
  type NodeReport,
  type WhereAnswer,
} from "../../cluster/admin.ts";
import { shardOf } from "../../cluster/addressing.ts";
import { exposition, metrics } from "../../cluster/metrics.ts";
import { ownerOf } from "../../cluster/placement/rendezvous.ts";
import type { Bus } from "../../cluster/transport/contract.ts";
import type { Authenticator } from "../auth.ts";
import { p } from "../params.ts";
import type { RealmResolver } from "../realm-resolver.ts";
import type { Parser } from "../route-types.ts";
import { AdminAuth, type AdminPrincipal } from "./auth.ts";
import { componentLogger } from "../../cluster/log.ts";
import { assetPath } from "../../cluster/assets.ts";

export const ADMIN_PREFIX = "/api/v1/admin";
export const PLACEMENT_PAGE = "/admin/placement";
const JSON_TYPE = "application/json; charset=utf-8";
const PAGE = readFileSync(assetPath("gateway/admin/placement.html"), "utf8");

export interface OpsOptions {
  bus: Bus;
  shards: number;
  realms: RealmResolver;
  auth: Authenticator;
  /** The nodes to expect answers from (Membership; embedded: its one node). */
  view?: ClusterView;
  /** Default: env ADMIN_TOKEN. */
  adminToken?: string | null;
}

type Query = Record<string, string | string[] | undefined>;

// ---- Shared HTTP helpers (also used by a node's admin port) ---------------------------

export function sendJson(reply: FastifyReply, payload: object): void {
  reply
    .code(200)
    .header("content-type", JSON_TYPE)
    .header("cache-control", "no-store")
    .send(JSON.stringify({ result: "success", msg: "", ...payload }) + "\n");
}

export function sendAdminError(reply: FastifyReply, err: unknown): void {
  if (!(err instanceof ZulipError)) componentLogger("admin").error({ err }, "admin endpoint failed");
  const e = toZulipError(err);
  const o: Record<string, unknown> = { result: "error", msg: e.message };
  if (e.code !== "") o.code = e.code;
  for (const k of Object.keys(e.extra)) if (!(k in o)) o[k] = e.extra[k];
  reply.code(e.status);
  for (const h of Object.keys(e.headers)) reply.header(h, e.headers[h]!);
  reply.header("content-type", JSON_TYPE).send(JSON.stringify(o) + "\n");
}

/** Read one query parameter with the API's parsers (Zulip's error texts). */
export function queryParam<T>(q: Query, name: string, parse: Parser<T>): T | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  return parse(typeof v === "string" ? v : v[v.length - 1]!, name);
}

function ignored(q: Query, accepted: string[]): { ignored_parameters_unsupported?: string[] } {
  const extra = Object.keys(q)
    .filter((k) => !accepted.includes(k))
    .sort();
  return extra.length ? { ignored_parameters_unsupported: extra } : {};
}

export const kindParser: Parser<Kind> = p.oneOf(KINDS, p.string());
export const realmParser = p.int({ min: 0 });
export const keyParser: Parser<string> = (raw, name) => {
  if (raw === "") throw errors.cannotBeBlank(name);
  return p.string({ maxLength: 200 })(raw, name);
};
export const topParser = p.int({ min: 1, max: MAX_TOP });

/** The (kind, realm, key) of a `where` request; realm defaults to the Host's realm. */
export function whereTarget(q: Query, who: AdminPrincipal): { kind: Kind; realm: number; key: string } {
  const kind = queryParam(q, "kind", kindParser);
  if (kind === undefined) throw errors.missingArgument("kind");
  const key = queryParam(q, "key", keyParser);
  if (key === undefined) throw errors.missingArgument("key");
  const realm = queryParam(q, "realm", realmParser) ?? who.hostRealmId;
  if (realm === null) throw errors.missingArgument("realm");
  // A realm owner sees the actors of their own realm only.
  if (who.realmId !== null && realm !== who.realmId) throw errors.accessDenied();
  return { kind, realm, key };
}

/**
 * Count GET /admin/... requests as route templates; the rest too (method,
 * template, status, duration), when the reply is sent.
 *
 * Not an onResponse hook: Fastify implements that with a closure and two
 * listeners ('finish', 'error') on every response, set up when the request
 * arrives, ~0.2 KB that each parked GET /events keeps for up to 100 s (docs/benchmarks.md
 * "What explains the current figures"). An onSend hook lives on the route, and the start time is one
 * number on the request. The duration ends when the reply is handed to Node
 * instead of when Node has flushed it (the same for our small bodies). A reply
 * to a client that already left (a parked poll whose client disconnected) is
 * not counted, as with onResponse: Node never finishes such a response.
 */
function installHttpMetrics(app: FastifyInstance): void {
  app.decorateRequest("startedAt", 0);
  app.addHook("onRequest", (req, _reply, done) => {
    req.startedAt = performance.now();
    done();
  });
  app.addHook("onSend", (req, reply, payload, done) => {
    if (!reply.raw.destroyed) {
      const ms = performance.now() - req.startedAt;
      metrics.http(req.method, req.routeOptions.url ?? "unmatched", reply.statusCode, ms);
    }
    done(null, payload);
  });
}

declare module "fastify" {
  interface FastifyRequest {
    /** performance.now() when the request arrived (installHttpMetrics). */
    startedAt: number;
  }
}

// ---- The gateway's endpoints ----------------------------------------------------------

export async function installOps(app: FastifyInstance, o: OpsOptions): Promise<void> {
  installHttpMetrics(app);
  const guard = new AdminAuth(
    o.realms,
    o.auth,
    o.adminToken === undefined ? process.env.ADMIN_TOKEN : o.adminToken,
  );
  const ask = new AdminBusClient(o.bus);
  app.addHook("onClose", async () => ask.close());
  const expected = () => (o.view ? o.view.liveNodes().map((n) => n.id) : null);

  const get = (
    url: string,
    accepted: string[],
    fn: (q: Query, who: AdminPrincipal, req: FastifyRequest, reply: FastifyReply) => Promise<object | null>,
  ) => {
    app.route({
      method: ["GET", "HEAD"],
      url,
      handler: async (req, reply) => {
        try {
          const who = await guard.check(req.headers.authorization, req.host);
          const q = req.query as Query;
          const out = await fn(q, who, req, reply);
          if (out !== null) sendJson(reply, { ...out, ...ignored(q, accepted) });
        } catch (err) {
          sendAdminError(reply, err);
        }
      },
    });
    app.route({
      method: ["POST", "PUT", "PATCH", "DELETE"],
      url,
      handler: async (_req, reply) => sendAdminError(reply, errors.methodNotAllowed(["GET", "HEAD"])),
    });
  };

  get("/metrics", [], async (_q, _who, _req, reply) => {
    const m = await exposition();
    reply.code(200).header("content-type", m.contentType).header("cache-control", "no-store").send(m.body);
    return null;
  });

  const reports = async (top = 0, realm: number | null = null) =>
    ask.ask<NodeReport>("report", { top, realm }, expected());

  get(`${ADMIN_PREFIX}/nodes`, [], async () => {
    const got = await reports();
    const live = o.view ? o.view.liveNodes() : [];
    const now = Date.now();
    const ids = [...new Set([...live.map((n) => n.id), ...got.keys()])].sort();
    const nodes = ids.map((id) => {
      const info = live.find((n) => n.id === id);
      const r = got.get(id);
      const base = {
        id,
        grpc: info?.grpc ?? null,
        draining: info?.draining ?? false,
        last_seen_ms_ago: info ? Math.max(0, now - info.lastSeen) : null,
        reachable: r !== undefined,
      };
      if (!r) return base;
      const { shards, deepest: _deepest, node: _node, ...rest } = r;
      return { ...base, shard_count: shards.length, ...rest };
    });
    return { nodes };
  });

  get(`${ADMIN_PREFIX}/shards`, [], async () => {
    const got = await reports();
    const served = new Map<number, { node: string; epoch: number }>();
    for (const [id, r] of got) {
      for (const s of r.shards) {
        const cur = served.get(s.shard);
        if (!cur || s.epoch > cur.epoch) served.set(s.shard, { node: id, epoch: s.epoch });
      }
    }
    const owners = o.view ? o.view.owners() : [...got.keys()].sort();
    const shards = [];
    const byNode: Record<string, number[]> = {};
    for (let shard = 0; shard < o.shards; shard++) {
      const s = served.get(shard);
      shards.push({
        shard,
        node: s?.node ?? null,
        epoch: s?.epoch ?? null,
        expected_node: ownerOf(shard, owners),
      });
      if (s) (byNode[s.node] ??= []).push(shard);
    }
    return { shard_count: o.shards, shards, by_node: byNode };
  });

  get(`${ADMIN_PREFIX}/where`, ["kind", "realm", "key"], async (q, who) => {
    const t = whereTarget(q, who);
    const ref = adminRef(t.kind, t.realm, t.key);
    const shard = shardOf(ref, o.shards);
    const got = await ask.ask<WhereAnswer>("where", t, expected());
    let owner: WhereAnswer | null = null;
    for (const a of got.values()) {
      if (a.serving && (owner === null || (a.epoch ?? 0) > (owner.epoch ?? 0))) owner = a;
    }
    const owners = o.view ? o.view.owners() : [...got.keys()].sort();
    return {
      kind: t.kind,
      realm: t.realm,
      key: t.key,
      shard,
      node: owner?.node ?? null,
      epoch: owner?.epoch ?? null,
      expected_node: ownerOf(shard, owners),
      active: owner?.active ?? false,
      mailbox_depth: owner?.mailbox_depth ?? 0,
    };
  });

  get(`${ADMIN_PREFIX}/top`, ["limit"], async (q, who) => {
    const limit = queryParam(q, "limit", topParser) ?? 10;
    const got = await reports(limit, who.realmId);
    const all = [...got.values()].flatMap((r) => r.deepest);
    all.sort((a, b) => b.depth - a.depth || (a.node < b.node ? -1 : 1));
    return { mailboxes: all.slice(0, limit) };
  });

  app.get(PLACEMENT_PAGE, async (_req, reply) => {
    reply
      .code(200)
      .header("content-type", "text/html; charset=utf-8")
      .header("cache-control", "no-store")
      .send(PAGE);
  });
}
