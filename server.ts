// Embedded mode: `npm start`. Gateway and node in one process, the
// in-process transport in place of gRPC/NATS and LMDB in place of Redis; the
// same actor code as cluster mode. No services needed. The wiring is in
// cluster/compose/embedded.ts, which loads no Redis, gRPC or NATS client.
// First: stack traces name the TypeScript sources (see there).
import "./cluster/source-maps.ts";
import { resolve } from "node:path";
import { bootstrapConfig, env } from "./cluster/config.ts";
import { firstLogin, startEmbedded } from "./cluster/compose/embedded.ts";
import { closeOnSignal, logBootstrapped, startProcess } from "./cluster/compose/process.ts";

export { firstLogin, startEmbedded };
export type { EmbeddedOptions, EmbeddedServer } from "./cluster/compose/embedded.ts";

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  // Logging and tracing first; tests that import startEmbedded start their own SDK.
  const log = startProcess("zulip-embedded");
  const srv = await startEmbedded({
    port: env.port(),
    host: env.host(),
    dataDir: env.dataDir(),
    shards: env.shardsIfSet(),
    bootstrap: bootstrapConfig(),
    generateOwner: true,
    logger: env.str("LOG_REQUESTS") === "1",
  });
  const b = srv.bootstrapped;
  logBootstrapped(log, b);
  // For the person at the terminal, not a log line: shown once, as text.
  if (b?.created && b.generated) process.stdout.write(firstLogin(b, srv.port) + "\n");
  log.info(`Embedded server listening on port ${srv.port} (data in ${env.dataDir()}).`);
  closeOnSignal(() => srv.close());
}
