// A node's own admin HTTP port (ADMIN_PORT; off when unset): /metrics and
// this node's view, with the same credentials as the gateway's admin API.
//   GET /metrics                 Prometheus text of this node process
//   GET /api/v1/admin/node       this node's report (shards with epochs, counts, memory, deepest mailboxes)
//   GET /api/v1/admin/where      whether this node serves / holds one actor
// Owner authentication goes through the node's own request path to the realm
// actors (wherever they live), like the gateway's.

import Fastify, { type FastifyInstance } from "fastify";
import { errors } from "../../actors/errors.ts";
import { adminRef, nodeReport, whereAnswer, type AdminNode } from "../../cluster/admin.ts";
import { exposition } from "../../cluster/metrics.ts";
import type { MemoryGuard } from "../../cluster/overload.ts";
import type { ActorClient, Bus } from "../../cluster/transport/contract.ts";
import { Authenticator } from "../auth.ts";
import { RealmResolver } from "../realm-resolver.ts";
import { AdminAuth } from "./auth.ts";
import { ADMIN_PREFIX, queryParam, sendAdminError, sendJson, topParser, whereTarget } from "./index.ts";

export interface NodeAdminOptions {
  node: AdminNode;
  guard: MemoryGuard | null;
  /** The node's way to reach actors (NodeRuntime.request). */
  client: ActorClient;
  bus: Bus;
  port: number;
  host?: string;
  adminToken?: string | null;
}

export async function startNodeAdminServer(
  o: NodeAdminOptions,
): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify({ logger: false });
  const realms = new RealmResolver(o.client, o.node.shards);
  const auth = new Authenticator(o.client, o.node.shards, o.bus);
  const guard = new AdminAuth(
    realms,
    auth,
    o.adminToken === undefined ? process.env.ADMIN_TOKEN : o.adminToken,
  );
  app.addHook("onClose", async () => auth.close());

  type Q = Record<string, string | string[] | undefined>;
  const get = (
    url: string,
    fn: (q: Q, realm: number | null, hostRealm: number | null) => Promise<object | null>,
  ) => {
    app.route({
      method: ["GET", "HEAD"],
      url,
      handler: async (req, res) => {
        try {
          const who = await guard.check(req.headers.authorization, req.headers.host ?? "");
          const out = await fn(req.query as Q, who.realmId, who.hostRealmId);
          if (out === null) {
            const m = await exposition();
            res.code(200).header("content-type", m.contentType).send(m.body);
          } else sendJson(res, out);
        } catch (err) {
          sendAdminError(res, err);
        }
      },
    });
  };
  get("/metrics", async () => null);
  get(`${ADMIN_PREFIX}/node`, async (q, realm) => {
    const top = queryParam(q, "limit", topParser) ?? 10;
    return { node: nodeReport(o.node, o.guard, top, realm) };
  });
  get(`${ADMIN_PREFIX}/where`, async (q, realm, hostRealm) => {
    const t = whereTarget(q, { realmId: realm, hostRealmId: hostRealm });
    return { where: whereAnswer(o.node, adminRef(t.kind, t.realm, t.key)) };
  });
  app.setNotFoundHandler((_req, res) => sendAdminError(res, errors.noSuchRoute()));
  await app.listen({ port: o.port, host: o.host ?? "0.0.0.0" });
  const addr = app.server.address();
  return { app, port: typeof addr === "object" && addr ? addr.port : o.port };
}
