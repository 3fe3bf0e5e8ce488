// `npm run manage -- <command>`: create organizations and users, print API
// keys. Embedded mode (no NATS_URL): opens DATA_DIR itself, so the embedded
// server must be stopped. Cluster mode (NATS_URL set): talks to the running
// nodes over NATS.
// First: stack traces name the TypeScript sources (see there).
import "./cluster/source-maps.ts";
import { parseArgs } from "node:util";
import {
  channelDirectoryRef,
  conversationRef,
  realmDirectoryRef,
  realmRef,
  userRef,
} from "./actors/addresses.ts";
import { typedCall, type TypedCall } from "./actors/protocol.ts";
import type { Value } from "./actors/types.ts";
import { env } from "./cluster/config.ts";
import type { Store } from "./cluster/storage/contract.ts";

type Call = TypedCall;

const USAGE = `usage: npm run manage -- <command> [options]
  create-realm --name NAME --host HOST --owner-email EMAIL --owner-password PW [--owner-name NAME]
  create-user  --email EMAIL --password PW --full-name NAME [--role 100|200|300|400|600] [--realm-id N]
  api-key      --email EMAIL [--realm-id N]
  realms
  restore      FILE   (embedded store in DATA_DIR only; see docs/export.md)
  migrate      convert every conversation of every organization to the current storage layout`;

// Loaded on use: the cluster module loads the Redis, gRPC and NATS clients.
async function withEmbedded<T>(fn: (call: Call, store: Store, shards: number) => Promise<T>): Promise<T> {
  const { withLocalNode } = await import("./cluster/compose/embedded.ts");
  return withLocalNode((call, store, shards) => fn(typedCall(call), store, shards));
}

async function withCluster<T>(fn: (call: Call) => Promise<T>): Promise<T> {
  const { withClusterCaller } = await import("./cluster/compose/cluster.ts");
  return withClusterCaller((call) => fn(typedCall(call)));
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: command === "restore",
    options: {
      name: { type: "string" },
      host: { type: "string" },
      "owner-email": { type: "string" },
      "owner-password": { type: "string" },
      "owner-name": { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      "full-name": { type: "string" },
      role: { type: "string" },
      "realm-id": { type: "string" },
    },
  });
  const need = (k: keyof typeof values): string => {
    const v = values[k];
    if (typeof v !== "string" || v === "") throw new Error(`--${k} is required\n${USAGE}`);
    return v;
  };
  const run = env.str("NATS_URL") ? withCluster : withEmbedded;
  const directory = realmDirectoryRef();
  const realmOf = async (call: Call): Promise<number> => {
    if (values["realm-id"]) return Number(values["realm-id"]);
    const realms = await call(directory, "listRealms", {});
    if (!realms.length) throw new Error("no organization exists: run create-realm first");
    return realms[0]!.realmId;
  };
  let out: Value;
  switch (command) {
    case "create-realm":
      out = await run((call) =>
        call(directory, "createRealm", {
          realmName: need("name"),
          host: need("host"),
          ownerEmail: need("owner-email"),
          ownerPassword: need("owner-password"),
          ownerName: values["owner-name"] ?? "Owner",
        }),
      );
      break;
    case "create-user":
      out = await run(async (call) => {
        const realm = await realmOf(call);
        // Without a caller, the realm answers {userId, apiKey}.
        const made = (await call(realmRef(realm), "createUser", {
          email: need("email"),
          password: need("password"),
          fullName: need("full-name"),
          role: Number(values.role ?? 400),
        })) as { userId: number; apiKey: string };
        // Zulip subscribes a new human user to the realm's default channels.
        await call(channelDirectoryRef(realm), "joinDefaultChannels", {
          user_id: made.userId,
        });
        return made;
      });
      break;
    case "api-key":
      out = await run(async (call) =>
        call(realmRef(await realmOf(call)), "apiKey", { email: need("email") }),
      );
      break;
    case "realms":
      out = await run((call) => call(directory, "listRealms", {}));
      break;
    case "restore":
      out = await restore(positionals[0]);
      break;
    case "migrate":
      out = await run(migrate);
      break;
    default:
      console.error(USAGE);
      process.exit(2);
  }
  console.log(JSON.stringify(out, null, 2));
}

/**
 * Restore an export file (docs/export.md) into the embedded store in
 * DATA_DIR, which must not know the organization (its id or its host).
 */
async function restore(file: string | undefined): Promise<Value> {
  if (!file) throw new Error(`restore needs the export file\n${USAGE}`);
  if (env.str("NATS_URL"))
    throw new Error("restore writes the embedded store in DATA_DIR: unset NATS_URL (docs/export.md)");
  const { readExport, restoreInto } = await import("./cluster/export.ts");
  const contents = await readExport(file);
  const { realmId, host, exportId } = contents.manifest;
  const directory = realmDirectoryRef();
  return withEmbedded(async (call, store, shards) => {
    const realms = await call(directory, "listRealms", {});
    const clash = realms.find((r) => r.realmId === realmId || r.host === host.toLowerCase());
    if (clash)
      throw new Error(
        `this store already has organization ${clash.realmId} at ${clash.host}: restore needs a store without it`,
      );
    const counts = await restoreInto(store, shards, contents);
    await call(directory, "registerRealm", { realmId, host });
    // The export that made this file was still pending when it was read; its
    // file is not part of the new store.
    if (exportId !== null) await call(realmRef(realmId), "failExport", { exportId });
    return { realmId, host, ...counts } as unknown as Value;
  });
}

/**
 * Activate every conversation (channels, and the direct-message
 * conversations its users hold rows of), so that state written by older
 * versions is converted now rather than on its first request (the
 * conversion runs at activation: Behavior.upgrade).
 */
async function migrate(call: Call): Promise<Value> {
  const realms = await call(realmDirectoryRef(), "listRealms", {});
  let conversations = 0;
  let messages = 0;
  for (const { realmId } of realms) {
    const keys = new Set<string>();
    const dir = channelDirectoryRef(realmId);
    for (const id of (await call(dir, "allChannelIds", {})).ids) keys.add(String(id));
    const roster = await call(realmRef(realmId), "roster", {});
    for (const u of roster.users ?? []) {
      const r = await call(userRef(realmId, u.userId), "dmConversationKeys", {});
      for (const k of r.keys) keys.add(k);
    }
    for (const key of keys) {
      const s = await call(conversationRef(realmId, key), "storeStatus", {});
      conversations++;
      messages += s.count;
    }
  }
  return { realms: realms.length, conversations, messages };
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
