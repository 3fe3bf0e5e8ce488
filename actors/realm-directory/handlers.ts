// Handlers of the realm directory (kind "realmDirectory", realm 0, key
// "directory"): which organization a Host header means, and creating
// organizations (server bootstrap and the manage CLI). It calls each new
// organization's realm actor; realm actors never call it.

import { errors } from "../errors.ts";
import {
  handlersOf,
  type ArgsOf,
  type DecisionOf,
  type HandlerOf,
  type MethodOf,
  type ReplyOf,
} from "../protocol.ts";
import { realmRef } from "../addresses.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import type { RealmDirectoryProtocol } from "./protocol.ts";
import type { DirectoryFact, DirectoryState } from "./state.ts";

type H<M extends MethodOf<RealmDirectoryProtocol>> = HandlerOf<DirectoryState, RealmDirectoryProtocol, M>;

function fact(f: DirectoryFact): Obj {
  return f as unknown as Obj;
}

function requireInternal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

/** Names of this machine: a realm at one of them is reachable under all of them. */
const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

/**
 * The realm a Host header (lowercased, port removed) names: its exact host;
 * for a loopback name, the realm registered at a loopback name (the default
 * EXTERNAL_HOST is "localhost", and a browser on the same machine may say
 * 127.0.0.1); else, only when the gateway says the deployment is a single
 * organization (`single`, env SINGLE_ORGANIZATION) and exactly one exists,
 * that one. Anything else is Zulip's unknown subdomain: a request must not
 * land in some organization just because its Host matched none.
 */
const resolveHost: H<"resolveHost"> = (state, args) => {
  const host = args.host.toLowerCase();
  let realmId: number | undefined = state.hosts[host];
  if (realmId === undefined && LOOPBACK_HOSTS.includes(host)) {
    for (const name of LOOPBACK_HOSTS) {
      realmId = state.hosts[name];
      if (realmId !== undefined) break;
    }
  }
  if (realmId === undefined && args.single === true && state.defaultRealmId !== null) {
    if (Object.keys(state.realms).length === 1) realmId = state.defaultRealmId;
  }
  if (realmId === undefined) throw errors.invalidSubdomain();
  return { reply: { realmId } };
};

const registerRealm: H<"registerRealm"> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const realmId = args.realmId;
  if (!Number.isInteger(realmId) || realmId <= 0) throw errors.notInteger("realmId");
  const host = args.host.toLowerCase();
  const holder = state.hosts[host];
  if (holder === realmId) return { reply: { realmId } };
  if (holder !== undefined) throw errors.realmHostInUse(host);
  return { facts: [fact({ type: "realmRegistered", realmId, host })], reply: { realmId } };
};

/** Every realm as [{realmId, host}], oldest (the default) first. */
const listRealms: H<"listRealms"> = (state) => ({
  reply: Object.values(state.realms)
    .sort((a, b) => a.realmId - b.realmId)
    .map((r) => ({ realmId: r.realmId, host: r.host })),
});

type NewRealmArgs = ArgsOf<RealmDirectoryProtocol, "createRealm">;

/**
 * Allocate a realm id, have the realm actor create itself and its owner,
 * then register the host. If this turn dies after the realm committed, a
 * retry allocates a new id; the first realm is never registered, so no
 * host leads to it.
 */
async function createRealmFlow(
  state: DirectoryState,
  args: NewRealmArgs,
  ctx: ActorContext,
): Promise<DecisionOf<ReplyOf<RealmDirectoryProtocol, "createRealm">>> {
  const host = args.host.toLowerCase();
  if (state.hosts[host] !== undefined) throw errors.realmHostInUse(host);
  const realmId = await ctx.nextId("realm");
  const created = await ctx.call(realmRef(realmId), "create", {
    name: args.realmName,
    description: args.description ?? "",
    host,
    ownerEmail: args.ownerEmail,
    ownerPassword: args.ownerPassword,
    ownerName: args.ownerName,
  });
  return {
    facts: [fact({ type: "realmRegistered", realmId, host })],
    reply: { realmId, userId: created.userId, apiKey: created.apiKey, created: true },
  };
}

/** Server start: create the first realm unless one exists (idempotent). */
const bootstrap: H<"bootstrap"> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  if (state.defaultRealmId === null) return createRealmFlow(state, args, ctx);
  const realmId = state.defaultRealmId;
  const owner = await ctx.call(realmRef(realmId), "apiKey", { email: args.ownerEmail });
  return { reply: { realmId, userId: owner?.userId ?? null, apiKey: owner?.apiKey ?? null, created: false } };
};

/** CLI: always a new realm. */
const createRealm: H<"createRealm"> = (state, args, ctx, caller) => {
  requireInternal(caller);
  return createRealmFlow(state, args, ctx);
};

export const realmDirectoryHandlers = handlersOf<DirectoryState, RealmDirectoryProtocol>()({
  resolveHost,
  registerRealm,
  listRealms,
  bootstrap,
  createRealm,
});
