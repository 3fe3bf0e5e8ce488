// A real embedded server (gateway + node + LMDB in a temp dir) for black-box
// HTTP tests, and the small client the tests use: apiPost-style helpers in
// the spirit of Zulip's test suite.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { startEmbedded } from "../../server.ts";
import type { Caller } from "../../actors/types.ts";
import type { EmbeddedOptions, EmbeddedServer } from "../../cluster/compose/embedded.ts";

export interface Creds {
  email: string;
  apiKey: string;
}

export interface ApiResult {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export type Api = (
  method: string,
  path: string,
  params?: Record<string, unknown>,
  auth?: Creds | null,
) => Promise<ApiResult>;

/** Form-encode like Zulip clients: strings raw, everything else as JSON text. */
export function formEncode(params: Record<string, unknown>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    sp.append(k, typeof v === "string" ? v : JSON.stringify(v));
  }
  return sp.toString();
}

export function basicAuth(c: Creds): string {
  return "Basic " + Buffer.from(`${c.email}:${c.apiKey}`).toString("base64");
}

export function makeApi(baseUrl: string, defaultAuth: Creds | null): Api {
  return async (method, path, params = {}, auth = defaultAuth) => {
    const headers: Record<string, string> = {};
    if (auth) headers.authorization = basicAuth(auth);
    const qs = formEncode(params);
    let url = `${baseUrl}/api/v1${path}`;
    let body: string | undefined;
    if (method === "GET" || method === "HEAD") {
      if (qs) url += `?${qs}`;
    } else {
      headers["content-type"] = "application/x-www-form-urlencoded";
      body = qs;
    }
    const res = await fetch(url, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // Not JSON: leave the text for the assertion to show.
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}

/** First-start settings for a test that starts its own embedded server (startEmbedded's `bootstrap`). */
export const TEST_BOOTSTRAP = {
  ownerEmail: "owner@example.com",
  ownerPassword: "owner-password-1",
  ownerName: "Olivia Owner",
  realmName: "Test Org",
  externalHost: "localhost",
};

export interface EmbeddedHandle {
  /** The current server's URL (a restart picks a new port). */
  readonly baseUrl: string;
  owner: Creds & { userId: number; password: string };
  /** Calls the current server: it follows restarts. */
  api: Api;
  /** Close the server and start it again on the same data directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface EmbeddedTestOptions {
  env?: Record<string, string>;
  wrapStore?: EmbeddedOptions["wrapStore"];
}

export async function startEmbeddedForTest(opts: EmbeddedTestOptions = {}): Promise<EmbeddedHandle> {
  const dir = mkdtempSync(join(tmpdir(), "zulip-embedded-"));
  const password = "owner-password-1";
  const email = opts.env?.OWNER_EMAIL ?? "owner@example.com";
  const open = async () => {
    // Zulip's per-user rate limit is off unless a test asks for it
    // (env.RATE_LIMIT_PER_MINUTE): suites send far more than 200 requests a
    // minute. The gateway reads the variable while it is built.
    const savedLimit = process.env.RATE_LIMIT_PER_MINUTE;
    process.env.RATE_LIMIT_PER_MINUTE = opts.env?.RATE_LIMIT_PER_MINUTE ?? "0";
    try {
      return await startEmbedded({
        port: 0,
        host: "127.0.0.1",
        dataDir: dir,
        shards: 16,
        bootstrap: {
          ownerEmail: email,
          ownerPassword: opts.env?.OWNER_PASSWORD ?? password,
          ownerName: opts.env?.OWNER_NAME ?? "Olivia Owner",
          realmName: opts.env?.REALM_NAME ?? "Test Org",
          externalHost: opts.env?.EXTERNAL_HOST ?? "localhost",
        },
        // Tests reach the server at 127.0.0.1 whatever EXTERNAL_HOST says:
        // one organization, stated explicitly (env.SINGLE_ORGANIZATION "0"
        // tests the unknown-host error).
        singleOrganization: (opts.env?.SINGLE_ORGANIZATION ?? "1") === "1",
        ...(opts.wrapStore ? { wrapStore: opts.wrapStore } : {}),
      });
    } finally {
      if (savedLimit === undefined) delete process.env.RATE_LIMIT_PER_MINUTE;
      else process.env.RATE_LIMIT_PER_MINUTE = savedLimit;
    }
  };
  let srv = await open();
  const b = srv.bootstrapped!;
  const owner = { email, apiKey: b.apiKey!, userId: b.userId!, password };
  let api = makeApi(srv.url, owner);
  return {
    get baseUrl() {
      return srv.url;
    },
    owner,
    api: (...a) => api(...a),
    async restart() {
      await srv.close();
      srv = await open();
      api = makeApi(srv.url, owner);
    },
    async stop() {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { startEmbeddedForTest as startEmbedded };

/**
 * An embedded server for the enclosing suite (the file, or the describe it
 * is called in), started in before() and stopped in after(). The handle
 * forwards to the running server, so a file keeps it in a const; options
 * given as a function are read when the server starts (after the suite's
 * earlier before() hooks, e.g. one that starts an SMTP server).
 */
export function useEmbedded(opts: EmbeddedTestOptions | (() => EmbeddedTestOptions) = {}): EmbeddedHandle {
  let h: EmbeddedHandle | undefined;
  let starting: Promise<EmbeddedHandle> | undefined;
  before(async () => {
    starting = startEmbeddedForTest(typeof opts === "function" ? opts() : opts);
    h = await starting;
  });
  after(async () => {
    await h?.stop();
  });
  // Node 20 runs a file's top-level before() hooks concurrently: the API
  // waits for the start, the fields are there once it is done.
  const live = (): EmbeddedHandle => {
    if (!h)
      throw new Error("the embedded server starts in before(); until it is up, only its API can be called");
    return h;
  };
  const started = async (): Promise<EmbeddedHandle> => {
    if (!starting) throw new Error("the embedded server starts in before()");
    return h ?? (await starting);
  };
  return {
    get baseUrl() {
      return live().baseUrl;
    },
    get owner() {
      return live().owner;
    },
    api: async (...a) => (await started()).api(...a),
    restart: () => live().restart(),
    stop: () => live().stop(),
  };
}

/** The server itself (its node and clients, for tests that forge actor requests), the owner's API and Caller. */
export interface EmbeddedNodeHandle {
  readonly srv: EmbeddedServer;
  readonly api: Api;
  readonly owner: Caller;
}

/**
 * An embedded server for the enclosing suite, started with TEST_BOOTSTRAP
 * in a temporary directory (name prefix `prefix`) in before() and removed
 * in after(). Unlike useEmbedded, the handle gives the EmbeddedServer
 * itself: its gateway client and node.
 */
export function useEmbeddedNode(prefix: string): EmbeddedNodeHandle {
  let dir: string | undefined;
  let h: EmbeddedNodeHandle | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    const srv = await startEmbedded({ port: 0, host: "127.0.0.1", dataDir: dir, bootstrap: TEST_BOOTSTRAP });
    const b = srv.bootstrapped!;
    h = {
      srv,
      api: makeApi(srv.url, { email: TEST_BOOTSTRAP.ownerEmail, apiKey: b.apiKey! }),
      owner: { realmId: b.realmId!, userId: b.userId!, role: 100, isBot: false },
    };
  });
  after(async () => {
    await h?.srv.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const live = (): EmbeddedNodeHandle => {
    if (!h) throw new Error("the embedded server starts in before()");
    return h;
  };
  return {
    get srv() {
      return live().srv;
    },
    get api() {
      return live().api;
    },
    get owner() {
      return live().owner;
    },
  };
}
