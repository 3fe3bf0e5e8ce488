// The embedded server as `npm start` runs it (a process, env configuration),
// and the management CLI: first-start bootstrap, acknowledged writes survive
// kill -9, the CLI refuses a store the server holds and works once it stops.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ACTOR_HOST_NODE_FLAGS, entryArgs, ROOT, startProc, type Proc } from "../bench/procs.ts";
import { freePort, makeApi } from "./support/index.ts";

const run = promisify(execFile);
const OWNER = { email: "first@example.com", password: "first-start-pw" };

function manage(dataDir: string, ...args: string[]) {
  return run(process.execPath, [...entryArgs("manage.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, NATS_URL: "" },
  });
}

describe("embedded process - npm start and the management CLI", () => {
  let dir: string;
  let port: number;
  let server: Proc | null = null;
  const start = async () => {
    server = await startProc(
      "embedded",
      "server.ts",
      {
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: dir,
        OWNER_EMAIL: OWNER.email,
        OWNER_PASSWORD: OWNER.password,
        REALM_NAME: "First Org",
        EXTERNAL_HOST: "chat.example.test",
        // Requests go to 127.0.0.1, not chat.example.test.
        SINGLE_ORGANIZATION: "1",
      },
      /listening on port/,
    );
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "embedded-proc-"));
    port = await freePort();
  });
  after(async () => {
    await server?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("first start bootstraps the organization and owner from the environment", async () => {
    await start();
    // Tests and benchmarks run the server with the V8 flags `npm start` gives it.
    const argv = readFileSync(`/proc/${server!.child.pid}/cmdline`, "utf8").split("\0");
    for (const flag of ACTOR_HOST_NODE_FLAGS) assert.ok(argv.includes(flag), argv.join(" "));
    assert.match(server!.output(), /Created organization 1 and its owner \(user 1\)/);
    const api = makeApi(`http://127.0.0.1:${port}`, null);
    const settings = await api("GET", "/server_settings", {}, null);
    assert.equal(settings.status, 200);
    assert.equal(settings.body.realm_name, "First Org");
    assert.equal(settings.body.realm_url, "http://chat.example.test");
    const key = await api(
      "POST",
      "/fetch_api_key",
      { username: OWNER.email, password: OWNER.password },
      null,
    );
    assert.equal(key.status, 200);
    assert.equal(key.body.user_id, 1);
  });

  test("an acknowledged write survives kill -9; a restart does not bootstrap again", async () => {
    const anon = makeApi(`http://127.0.0.1:${port}`, null);
    const key = await anon(
      "POST",
      "/fetch_api_key",
      { username: OWNER.email, password: OWNER.password },
      null,
    );
    const api = makeApi(`http://127.0.0.1:${port}`, { email: OWNER.email, apiKey: key.body.api_key });
    assert.equal((await api("PATCH", "/settings", { full_name: "Durable Name" })).status, 200);
    await server!.stop("SIGKILL");
    await start();
    assert.doesNotMatch(server!.output(), /Created organization/);
    const me = await api("GET", "/users/me");
    assert.equal(me.status, 200);
    assert.equal(me.body.full_name, "Durable Name");
  });

  test("the CLI refuses the store while the server runs, then creates users and prints keys", async () => {
    await assert.rejects(manage(dir, "realms"), /embedded server \(pid \d+\) is running/);
    await server!.stop("SIGTERM");
    server = null;

    const created = await manage(
      dir,
      "create-user",
      "--email",
      "cli@example.com",
      "--password",
      "cli-password",
      "--full-name",
      "Cli User",
    );
    const user = JSON.parse(created.stdout) as { userId: number; apiKey: string };
    // The owner is user 1; the kill -9 above may leave a gap in the ids
    // (the store hands ids out of reserved blocks), never a reused one.
    assert.ok(Number.isInteger(user.userId) && user.userId > 1, `user id ${user.userId}`);
    assert.match(user.apiKey, /^[A-Za-z0-9]{32}$/);
    const key = JSON.parse((await manage(dir, "api-key", "--email", "cli@example.com")).stdout);
    assert.equal(key.apiKey, user.apiKey);
    await assert.rejects(manage(dir, "create-user", "--email", "x@example.com"), /--password is required/);
    await assert.rejects(manage(dir, "no-such-command"), /usage: npm run manage/);

    await start();
    const api = makeApi(`http://127.0.0.1:${port}`, { email: "cli@example.com", apiKey: user.apiKey });
    const me = await api("GET", "/users/me");
    assert.equal(me.status, 200);
    assert.equal(me.body.full_name, "Cli User");
  });
});

describe("embedded process - first run with no environment", () => {
  let dir: string;
  let server: Proc | null = null;
  after(async () => {
    await server?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("npm start makes up the owner and prints a working login once", async () => {
    // A dot in DATA_DIR's name too: it is a directory all the same.
    dir = mkdtempSync(join(tmpdir(), "first.run-"));
    const port = await freePort();
    const env = { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dir, OWNER_EMAIL: "", OWNER_PASSWORD: "" };
    server = await startProc("embedded", "server.ts", { ...env, EXTERNAL_HOST: "" }, /listening on port/);
    const out = server.output();
    const email = /email: +(\S+)/.exec(out)?.[1];
    const password = /password: +(\S+)/.exec(out)?.[1];
    const apiKey = /API key: +(\S+)/.exec(out)?.[1];
    assert.equal(email, "owner@localhost");
    assert.ok(password && password.length >= 20, out);
    assert.match(
      out,
      new RegExp(`\\[api\\]\\nemail=owner@localhost\\nkey=${apiKey}\\nsite=http://localhost:${port}\\n`),
    );

    const anon = makeApi(`http://127.0.0.1:${port}`, null);
    const key = await anon("POST", "/fetch_api_key", { username: email, password }, null);
    assert.equal(key.status, 200);
    assert.equal(key.body.api_key, apiKey);
    const me = await makeApi(`http://127.0.0.1:${port}`, { email: email!, apiKey: apiKey! })(
      "GET",
      "/users/me",
    );
    assert.equal(me.status, 200);
    assert.equal(me.body.role, 100);

    await server.stop("SIGTERM");
    server = await startProc("embedded", "server.ts", { ...env, EXTERNAL_HOST: "" }, /listening on port/);
    assert.doesNotMatch(server.output(), /password:|Created organization/);
  });
});

describe("npm start's node flags", () => {
  test("the scripts that start actor hosts pass ACTOR_HOST_NODE_FLAGS; the gateway none", () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    const flags = ACTOR_HOST_NODE_FLAGS.join(" ");
    assert.equal(scripts.start, `npm run build && node ${flags} dist/server.js`);
    assert.equal(scripts["start:node"], `npm run build && node ${flags} dist/cluster/node-main.js`);
    assert.equal(scripts["start:gateway"], "npm run build && node dist/gateway/gateway-main.js");
    assert.deepEqual(entryArgs("cluster/node-main.ts").slice(0, ACTOR_HOST_NODE_FLAGS.length), [
      ...ACTOR_HOST_NODE_FLAGS,
    ]);
    assert.ok(!entryArgs("gateway/gateway-main.ts").some((a) => ACTOR_HOST_NODE_FLAGS.includes(a)));
  });
});
