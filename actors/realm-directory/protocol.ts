// The realm directory's methods (handlers.ts): their arguments, replies
// and which a gateway may call. How to add one: docs/architecture.md,
// "Actor protocols".

import { Type } from "typebox";
import { SafeInt, reply } from "../protocol.ts";

/** A new organization and its owner (the server's first start, the CLI). */
const NewRealm = Type.Object({
  realmName: Type.String(),
  description: Type.Optional(Type.String()),
  host: Type.String(),
  ownerEmail: Type.String(),
  ownerPassword: Type.String(),
  ownerName: Type.String(),
});

export const realmDirectoryProtocol = {
  /**
   * The organization a Host header names (the gateway's RealmResolver);
   * `single`: the deployment is one organization (SINGLE_ORGANIZATION).
   */
  resolveHost: {
    args: Type.Object({ host: Type.String(), single: Type.Optional(Type.Boolean()) }),
    reply: reply<{ realmId: number }>(),
    external: "anonymous",
  },
  /** Internal: a restored organization's host (manage restore). */
  registerRealm: {
    args: Type.Object({ realmId: SafeInt, host: Type.String() }),
    reply: reply<{ realmId: number }>(),
  },
  /** Internal: every organization, oldest (the default) first. */
  listRealms: { args: Type.Object({}), reply: reply<{ realmId: number; host: string }[]>() },
  /** Internal: the server's first start; creates the first organization unless one exists. */
  bootstrap: {
    args: NewRealm,
    reply: reply<{ realmId: number; userId: number | null; apiKey: string | null; created: boolean }>(),
  },
  /** Internal: the CLI's create-realm, always a new organization. */
  createRealm: {
    args: NewRealm,
    reply: reply<{ realmId: number; userId: number; apiKey: string; created: true }>(),
  },
} as const;

export type RealmDirectoryProtocol = typeof realmDirectoryProtocol;
