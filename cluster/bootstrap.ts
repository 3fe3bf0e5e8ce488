// First start: when the store holds no organization, create one and its
// owner from OWNER_EMAIL / OWNER_PASSWORD (README: "First start").
import type { Value } from "../actors/types.ts";
import type { BootstrapConfig } from "./config.ts";

type Caller = (
  ref: { kind: "realm"; realm: number; key: string },
  method: string,
  args: Record<string, Value>,
) => Promise<Value>;

export interface BootstrapResult {
  realmId: number;
  userId: number | null;
  apiKey: string | null;
  created: boolean;
}

export async function bootstrap(call: Caller, cfg: BootstrapConfig): Promise<BootstrapResult | null> {
  if (!cfg.ownerEmail || !cfg.ownerPassword) {
    const realms = (await call({ kind: "realm", realm: 0, key: "directory" }, "listRealms", {})) as unknown[];
    if (!realms || (Array.isArray(realms) && realms.length === 0)) {
      console.warn(
        "No organization exists yet. Set OWNER_EMAIL and OWNER_PASSWORD on first start, " +
          "or run `npm run manage -- create-realm`.",
      );
    }
    return null;
  }
  const r = (await call({ kind: "realm", realm: 0, key: "directory" }, "bootstrap", {
    realmName: cfg.realmName,
    host: cfg.externalHost,
    ownerEmail: cfg.ownerEmail,
    ownerPassword: cfg.ownerPassword,
    ownerName: cfg.ownerName,
  })) as unknown as BootstrapResult;
  return r;
}
