// The probes' server: an embedded server in the probe's own process (the
// probes count its actor calls or store operations, or profile it), on a
// free port and a temporary data directory, with rate limits off as the
// bench servers run (bench/servers.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbedded, type EmbeddedServer } from "../cluster/compose/embedded.ts";
import { env } from "../cluster/config.ts";
import type { Store } from "../cluster/storage/contract.ts";
import { basic, type Auth } from "./client.ts";

export const PROBE_OWNER = { email: "probe-owner@example.com", password: "probe-owner-password" };

export interface ProbeServer {
  srv: EmbeddedServer;
  /** The owner's credentials. */
  auth: Auth;
  ownerId: number;
  close(): Promise<void>;
}

export async function startProbeServer(
  tag: string,
  wrapStore?: (store: Store) => Store,
): Promise<ProbeServer> {
  process.env.RATE_LIMIT_PER_MINUTE ??= "0";
  const dir = mkdtempSync(join(tmpdir(), `${tag}-`));
  const srv = await startEmbedded({
    port: 0,
    host: "127.0.0.1",
    dataDir: dir,
    // The embedded default unless SHARDS says otherwise.
    shards: env.shardsIfSet(),
    bootstrap: {
      ownerEmail: PROBE_OWNER.email,
      ownerPassword: PROBE_OWNER.password,
      ownerName: "Owner",
      realmName: "Probe",
      externalHost: "localhost",
    },
    ...(wrapStore ? { wrapStore } : {}),
  });
  return {
    srv,
    auth: basic(PROBE_OWNER.email, srv.bootstrapped!.apiKey!),
    ownerId: srv.bootstrapped!.userId!,
    async close() {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
