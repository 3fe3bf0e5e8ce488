// Real nats-server and redis-server processes for tests and benchmarks, on
// free ports with temporary data dirs, stopped by pid afterwards. With
// CI=true a missing binary is a failure, never a skip.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function hasBinary(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Returns a reason to skip, or undefined; throws under CI=true. */
export function requireBinaries(...names: string[]): string | undefined {
  const missing = names.filter((n) => !hasBinary(n));
  if (missing.length === 0) return undefined;
  const msg = `missing ${missing.join(", ")} (apt-get install -y nats-server redis-server)`;
  if (process.env.CI === "true") throw new Error(msg);
  return msg;
}

/**
 * Ports handed out below the kernel's ephemeral range (32768-60999 here),
 * so an outgoing connection of a busy test run cannot take a port between
 * the check and the server's bind (freePort(0) picks from that very range:
 * a node once failed with EADDRINUSE that way). Random start, one process
 * never hands the same port out twice.
 */
const PORT_LOW = 20_000;
const PORT_HIGH = 32_000;
let nextPort = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "0.0.0.0", () => srv.close(() => resolve(true)));
  });
}

/** A TCP port nothing listens on now, for a server a test or benchmark starts. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PORT_HIGH - PORT_LOW; tries++) {
    const port = nextPort;
    nextPort = nextPort + 1 >= PORT_HIGH ? PORT_LOW : nextPort + 1;
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_LOW}-${PORT_HIGH}`);
}

/**
 * Start a server on a free port, and on another one when something took
 * the port between the check and the bind (EADDRINUSE: another test file's
 * server in a parallel run). Up to three ports.
 */
export async function onFreePort<T>(
  start: (port: number) => Promise<T>,
): Promise<{ port: number; server: T }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { port, server: await start(port) };
    } catch (err) {
      if (attempt >= 3 || !String(err).includes("EADDRINUSE")) throw err;
    }
  }
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} did not open`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Service {
  port: number;
  url: string;
  proc: ChildProcess;
  dir: string;
  /** Stop (SIGTERM, then SIGKILL) and remove the data dir. */
  stop(): Promise<void>;
  /** kill -9 the process, keeping its data dir (for restart tests). */
  kill9(): Promise<void>;
  /** Start again on the same port and data dir. */
  restart(): Promise<void>;
}

function stopProc(proc: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
    proc.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    proc.kill(signal);
  });
}

async function startService(
  bin: string,
  argsFor: (port: number, dir: string) => string[],
  scheme: string,
  envFor?: (port: number) => Record<string, string>,
  userinfo = "",
): Promise<Service> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `${bin}-`));
  const launch = () => {
    const env = envFor ? { ...process.env, ...envFor(port) } : undefined;
    const p = spawn(bin, argsFor(port, dir), { stdio: "ignore", env });
    p.on("error", () => {});
    return p;
  };
  const svc: Service = {
    port,
    url: `${scheme}://${userinfo}127.0.0.1:${port}`,
    proc: launch(),
    dir,
    async stop() {
      await stopProc(svc.proc);
      rmSync(dir, { recursive: true, force: true });
    },
    async kill9() {
      await stopProc(svc.proc, "SIGKILL");
    },
    async restart() {
      await stopProc(svc.proc, "SIGKILL");
      svc.proc = launch();
      await waitForPort(port);
    },
  };
  await waitForPort(port);
  return svc;
}

export function startNats(): Promise<Service> {
  return startService("nats-server", (port) => ["-a", "127.0.0.1", "-p", String(port)], "nats");
}

/**
 * nats-server from a configuration file (e.g. docs/nats-server.conf.example)
 * whose `$NAME` values come from `env`; NATS_LISTEN is set to the free port.
 * It logs to `nats.log` in the service's dir (errors such as permission
 * violations included).
 */
export function startNatsWithConfig(config: string, env: Record<string, string>): Promise<Service> {
  return startService(
    "nats-server",
    (_port, dir) => ["-c", config, "-l", join(dir, "nats.log")],
    "nats",
    (port) => ({
      ...env,
      NATS_LISTEN: `127.0.0.1:${port}`,
    }),
  );
}

/**
 * redis-server's arguments for one process of ours: loopback only, data in
 * `dir`, AOF on (`appendfsync` everysec as deployed, or always), no RDB
 * snapshots, no protected mode.
 */
export function redisArgs(
  port: number,
  dir: string,
  appendfsync: "everysec" | "always" = "everysec",
): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    appendfsync,
    "--save",
    "",
    "--protected-mode",
    "no",
  ];
}

/**
 * Redis with AOF on, as deployed: appendfsync everysec. Redis write()s the AOF
 * before it replies, so a kill -9 of Redis itself loses no acknowledged write;
 * only a machine crash can lose up to one second (docs/architecture.md "Durability").
 */
export function startRedis(): Promise<Service> {
  return startService("redis-server", (port, dir) => redisArgs(port, dir), "redis");
}

export interface SecureRedisOptions {
  /** PEM files of the server's certificate and key, and of the CA clients' certificates must chain to. */
  cert: string;
  key: string;
  ca: string;
  /** Require a client certificate signed by `ca`. */
  authClients: boolean;
  /** The only ACL user (the default user is off). */
  user: string;
  password: string;
}

/**
 * Redis as a deployment with the cluster secured runs it: TLS only (no
 * plaintext port), an ACL user with a password and the default user off.
 * `url` is `rediss://user:password@127.0.0.1:<port>`.
 */
/** redisArgs with the plaintext port off and TLS on `port`, an ACL user only. */
function secureRedisArgs(port: number, dir: string, o: SecureRedisOptions): string[] {
  const args = redisArgs(port, dir);
  args.splice(0, 2, "--port", "0", "--tls-port", String(port));
  return [
    ...args,
    "--tls-cert-file",
    o.cert,
    "--tls-key-file",
    o.key,
    "--tls-ca-cert-file",
    o.ca,
    "--tls-auth-clients",
    o.authClients ? "yes" : "no",
    "--user",
    "default",
    "off",
    "--user",
    o.user,
    "on",
    `>${o.password}`,
    "~*",
    "&*",
    "+@all",
  ];
}

/** redis-cli's flags to reach such a server (the server's own certificate serves as client's). */
function secureCliArgs(o: SecureRedisOptions): string[] {
  return [
    "--tls",
    "--cacert",
    o.ca,
    "--cert",
    o.cert,
    "--key",
    o.key,
    "--user",
    o.user,
    "--pass",
    o.password,
    "--no-auth-warning",
  ];
}

function userinfo(o: SecureRedisOptions): string {
  return `${encodeURIComponent(o.user)}:${encodeURIComponent(o.password)}@`;
}

/**
 * Redis as a deployment with the cluster secured runs it: TLS only (no
 * plaintext port), an ACL user with a password and the default user off.
 * `url` is `rediss://user:password@127.0.0.1:<port>`.
 */
export function startSecureRedis(o: SecureRedisOptions): Promise<Service> {
  return startService(
    "redis-server",
    (port, dir) => secureRedisArgs(port, dir, o),
    "rediss",
    undefined,
    userinfo(o),
  );
}

export interface RedisClusterService {
  /** One `redis[s]://[user:password@]127.0.0.1:<port>` per master (seed URLs for REDIS_CLUSTER_URLS). */
  urls: string[];
  procs: ChildProcess[];
  dirs: string[];
  /** Stop every redis-server by pid and remove the data dirs. */
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster of `masters` redis-server processes (no replicas),
 * each on a free port with its own temp dir and cluster bus port, joined with
 * `redis-cli --cluster create`; resolves once every node says cluster_state:ok.
 * AOF on, as deployed. With `secure`, every node is TLS only (cluster bus
 * included) with an ACL user, and the URLs are rediss:// with credentials.
 */
export async function startRedisCluster(
  masters = 3,
  secure?: SecureRedisOptions,
): Promise<RedisClusterService> {
  const cli = secure ? secureCliArgs(secure) : [];
  const procs: ChildProcess[] = [];
  const dirs: string[] = [];
  const ports: number[] = [];
  const svc: RedisClusterService = {
    urls: [],
    procs,
    dirs,
    async stop() {
      await Promise.all(procs.map((p) => stopProc(p)));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      // The bus port is set explicitly: port + 10000 may not exist or be free.
      const busPort = await freePort();
      const dir = mkdtempSync(join(tmpdir(), "redis-cluster-"));
      dirs.push(dir);
      const p = spawn(
        "redis-server",
        [
          ...(secure
            ? [...secureRedisArgs(port, dir, secure), "--tls-cluster", "yes"]
            : redisArgs(port, dir)),
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, "nodes.conf"),
          "--cluster-port",
          String(busPort),
        ],
        { stdio: "ignore" },
      );
      p.on("error", () => {});
      procs.push(p);
      ports.push(port);
    }
    for (const port of ports) await waitForPort(port);
    execFileSync(
      "redis-cli",
      [
        ...cli,
        "--cluster",
        "create",
        ...ports.map((p) => `127.0.0.1:${p}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ],
      { stdio: "ignore", timeout: 30_000 },
    );
    const until = Date.now() + 30_000;
    for (const port of ports) {
      for (;;) {
        const info = execFileSync("redis-cli", [...cli, "-p", String(port), "cluster", "info"]).toString();
        if (/cluster_state:ok/.test(info)) break;
        if (Date.now() > until) throw new Error(`redis cluster node ${port} never reached cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    svc.urls = ports.map((p) =>
      secure ? `rediss://${userinfo(secure)}127.0.0.1:${p}` : `redis://127.0.0.1:${p}`,
    );
    return svc;
  } catch (err) {
    await svc.stop();
    throw err;
  }
}
