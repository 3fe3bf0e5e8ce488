// First start: when the store holds no organization, create one and its
// owner from OWNER_EMAIL / OWNER_PASSWORD (see README.md on the first login). The
// embedded server (`npm start`) with neither set makes up the owner itself
// and hands back the credentials, which it prints once.
import { randomBytes } from "node:crypto";
import { realmDirectoryRef } from "../actors/index.ts";
import type { TypedCall } from "../actors/protocol.ts";
import type { BootstrapConfig } from "./config.ts";
import { rootLogger } from "./log.ts";

export interface BootstrapResult {
  realmId: number;
  userId: number | null;
  apiKey: string | null;
  created: boolean;
  /** The owner's login when bootstrap made it up (generateOwner): shown once, never stored in clear. */
  generated?: { email: string; password: string };
}

/** The owner's email on a made-up first start: owner@<EXTERNAL_HOST without its port>. */
export function generatedOwnerEmail(externalHost: string): string {
  const host = externalHost.replace(/:\d+$/, "").toLowerCase();
  return `owner@${host || "localhost"}`;
}

/** A made-up owner's password (bootstrap's generateOwner). */
export function newOwnerPassword(): string {
  return randomBytes(18).toString("base64url");
}

export async function bootstrap(
  call: TypedCall,
  cfg: BootstrapConfig,
  opts: { generateOwner?: boolean; generatedPassword?: string } = {},
): Promise<BootstrapResult | null> {
  if (!cfg.ownerEmail || !cfg.ownerPassword) {
    const realms = await call(realmDirectoryRef(), "listRealms", {});
    if (realms.length === 0) {
      if (opts.generateOwner && !cfg.ownerEmail && !cfg.ownerPassword) {
        const email = generatedOwnerEmail(cfg.externalHost);
        const password = opts.generatedPassword ?? newOwnerPassword();
        const r = await bootstrap(call, { ...cfg, ownerEmail: email, ownerPassword: password });
        return r && { ...r, generated: { email, password } };
      }
      rootLogger().warn(
        "No organization exists yet. Set OWNER_EMAIL and OWNER_PASSWORD on first start, " +
          "or run `npm run manage -- create-realm`.",
      );
    }
    return null;
  }
  return await call(realmDirectoryRef(), "bootstrap", {
    realmName: cfg.realmName,
    host: cfg.externalHost,
    ownerEmail: cfg.ownerEmail,
    ownerPassword: cfg.ownerPassword,
    ownerName: cfg.ownerName,
  });
}
