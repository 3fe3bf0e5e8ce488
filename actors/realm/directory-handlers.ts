// Handlers of the realm directory (ref {kind "realm", realm 0, key
// "directory"}): which organization a Host header means, and creating
// organizations (server bootstrap and the manage CLI).

import { errors } from "../errors.ts";
import type { ActorContext, Caller, Decision, Handler, Obj } from "../types.ts";
import { argString, optBool, optString } from "../user/index.ts";
import { realmRef } from "./refs.ts";
import type { DirectoryFact, DirectoryState } from "./state.ts";

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
const resolveHost: Handler<DirectoryState> = (state, args) => {
  const host = argString(args, "host").toLowerCase();
  let realmId: number | undefined = state.hosts[host];
  if (realmId === undefined && LOOPBACK_HOSTS.includes(host)) {
    for (const name of LOOPBACK_HOSTS) {
      realmId = state.hosts[name];
      if (realmId !== undefined) break;
    }
  }
  if (realmId === undefined && optBool(args, "single") === true && state.defaultRealmId !== null) {
    if (Object.keys(state.realms).length === 1) realmId = state.defaultRealmId;
  }
  if (realmId === undefined) throw errors.invalidSubdomain();
  return { reply: { realmId } };
};

const registerRealm: Handler<DirectoryState> = (state, args, _ctx, caller) => {
  requireInternal(caller);
  const realmId = args.realmId;
  if (typeof realmId !== "number" || !Number.isInteger(realmId) || realmId <= 0) {
    throw errors.notInteger("realmId");
  }
  const host = argString(args, "host").toLowerCase();
  const holder = state.hosts[host];
  if (holder === realmId) return { reply: { realmId } };
  if (holder !== undefined) throw errors.realmHostInUse(host);
  return { facts: [fact({ type: "realmRegistered", realmId, host })], reply: { realmId } };
};

/** Every realm as [{realmId, host}], oldest (the default) first. */
const listRealms: Handler<DirectoryState> = (state) => ({
  reply: Object.values(state.realms)
    .sort((a, b) => a.realmId - b.realmId)
    .map((r) => ({ realmId: r.realmId, host: r.host })),
});

/**
 * Allocate a realm id, have the realm actor create itself and its owner,
 * then register the host. If this turn dies after the realm committed, a
 * retry allocates a new id; the first realm is never registered, so no
 * host leads to it.
 */
async function createRealmFlow(state: DirectoryState, args: Obj, ctx: ActorContext): Promise<Decision> {
  const host = argString(args, "host").toLowerCase();
  if (state.hosts[host] !== undefined) throw errors.realmHostInUse(host);
  const realmId = await ctx.nextId("realm");
  const created = (await ctx.call(realmRef(realmId), "create", {
    name: argString(args, "realmName"),
    description: optString(args, "description") ?? "",
    host,
    ownerEmail: argString(args, "ownerEmail"),
    ownerPassword: argString(args, "ownerPassword"),
    ownerName: argString(args, "ownerName"),
  })) as { userId: number; apiKey: string };
  return {
    facts: [fact({ type: "realmRegistered", realmId, host })],
    reply: { realmId, userId: created.userId, apiKey: created.apiKey, created: true },
  };
}

/** Server start: create the first realm unless one exists (idempotent). */
const bootstrap: Handler<DirectoryState> = async (state, args, ctx, caller) => {
  requireInternal(caller);
  if (state.defaultRealmId === null) return createRealmFlow(state, args, ctx);
  const realmId = state.defaultRealmId;
  const owner = (await ctx.call(realmRef(realmId), "apiKey", { email: argString(args, "ownerEmail") })) as {
    userId: number;
    apiKey: string;
  } | null;
  return { reply: { realmId, userId: owner?.userId ?? null, apiKey: owner?.apiKey ?? null, created: false } };
};

/** CLI: always a new realm. */
const createRealm: Handler<DirectoryState> = (state, args, ctx, caller) => {
  requireInternal(caller);
  return createRealmFlow(state, args, ctx);
};

export const directoryHandlers: Record<string, Handler<DirectoryState>> = {
  resolveHost,
  registerRealm,
  listRealms,
  bootstrap,
  createRealm,
};
