// Who may use the admin API and /metrics: never the public.
//
// - `Authorization: Bearer <ADMIN_TOKEN>` (the process's ADMIN_TOKEN
//   environment variable; compared in constant time): the whole cluster.
// - HTTP Basic with the email and API key of an owner of the realm that the
//   Host resolves to, exactly like the API: the cluster-level tables (nodes,
//   shards) and the actors of the owner's own realm.
// Missing credentials: 401; a bad token or key: 401; a valid user who is not
// an organization owner: 403.

import { timingSafeEqual } from "node:crypto";
import { errors } from "../../actors/errors.ts";
import { ROLE_OWNER } from "../../actors/user/index.ts";
import type { Authenticator } from "../auth.ts";
import type { RealmResolver } from "../realm-resolver.ts";

/** null realmId: the admin token (every realm). */
export interface AdminPrincipal {
  realmId: number | null;
  /** The realm the Host resolved to (the default for `where`), when it resolved. */
  hostRealmId: number | null;
}

const TIMEOUT_MS = 5000;

export class AdminAuth {
  private readonly token: Buffer | null;

  constructor(
    private readonly realms: RealmResolver,
    private readonly auth: Authenticator,
    token: string | null | undefined = process.env.ADMIN_TOKEN,
  ) {
    this.token = token ? Buffer.from(token, "utf8") : null;
  }

  /** Resolve the caller or throw the ZulipError to send. */
  async check(authorization: string | undefined, hostHeader: string): Promise<AdminPrincipal> {
    if (authorization === undefined || authorization.trim() === "") throw errors.notLoggedIn();
    const deadline = Date.now() + TIMEOUT_MS;
    const bearer = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
    if (bearer) {
      const given = Buffer.from(bearer[1]!, "utf8");
      if (this.token === null || given.length !== this.token.length || !timingSafeEqual(given, this.token))
        throw errors.adminInvalidToken();
      let hostRealmId: number | null = null;
      try {
        hostRealmId = (await this.realms.resolve(hostHeader, deadline)).realmId;
      } catch {
        // No realm at this host: `where` then needs an explicit realm.
      }
      return { realmId: null, hostRealmId };
    }
    const realm = await this.realms.resolve(hostHeader, deadline);
    const c = this.auth.authenticate(authorization, realm.realmId, deadline);
    const caller = c instanceof Promise ? await c : c;
    if (caller.role !== ROLE_OWNER) throw errors.adminOwnerRequired();
    return { realmId: realm.realmId, hostRealmId: realm.realmId };
  }
}
