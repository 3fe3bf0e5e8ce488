// An embedded DATA_DIR records the shard count its data is placed by: a new
// one gets EMBEDDED_SHARDS (or SHARDS when set), later starts and the
// management CLI read it back, a different SHARDS stops the start, and a
// directory written before the count was recorded keeps the count it was
// run with.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { open } from "lmdb";
import { EMBEDDED_SHARDS } from "../cluster/addressing.ts";
import { withLocalNode } from "../cluster/compose/embedded.ts";
import { startEmbedded, type EmbeddedServer } from "../server.ts";
import { assertSuccess, makeApi, TEST_BOOTSTRAP } from "./support/index.ts";

const BOOT = TEST_BOOTSTRAP;

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function newDir(): string {
  const d = mkdtempSync(join(tmpdir(), "zulip-shards-"));
  dirs.push(d);
  return d;
}

function boot(dataDir: string, shards?: number): Promise<EmbeddedServer> {
  return startEmbedded({
    port: 0,
    host: "127.0.0.1",
    dataDir,
    bootstrap: BOOT,
    ...(shards ? { shards } : {}),
  });
}

/** The management CLI's node on `dataDir`: the shard count it runs with. */
async function cliShards(dataDir: string, shardsEnv?: string): Promise<number> {
  const saved = { dir: process.env.DATA_DIR, shards: process.env.SHARDS };
  process.env.DATA_DIR = dataDir;
  if (shardsEnv === undefined) delete process.env.SHARDS;
  else process.env.SHARDS = shardsEnv;
  try {
    return await withLocalNode(async (_call, _store, shards) => shards);
  } finally {
    for (const [k, v] of [
      ["DATA_DIR", saved.dir],
      ["SHARDS", saved.shards],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

/** Send a message and read it back: the data is where the shard count says. */
async function sendAndRead(srv: EmbeddedServer, content: string | null): Promise<string[]> {
  const b = srv.bootstrapped!;
  const api = makeApi(srv.url, { email: BOOT.ownerEmail, apiKey: b.apiKey! });
  if (content !== null) {
    assertSuccess(await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: "placed" }] }));
    assertSuccess(await api("POST", "/messages", { type: "stream", to: "placed", topic: "t", content }));
  }
  const got = await api("GET", "/messages", {
    anchor: "newest",
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: "channel", operand: "placed" }],
  });
  assertSuccess(got);
  return (got.body.messages as { content: string }[]).map((m) => m.content);
}

describe("embedded shard count", () => {
  test("a new DATA_DIR gets EMBEDDED_SHARDS, and keeps it", async () => {
    const dir = newDir();
    let srv = await boot(dir);
    assert.equal(srv.shards, EMBEDDED_SHARDS);
    await sendAndRead(srv, "before the restart");
    await srv.close();
    srv = await boot(dir);
    try {
      assert.equal(srv.shards, EMBEDDED_SHARDS);
      assert.ok((await sendAndRead(srv, null)).some((c) => c.includes("before the restart")));
    } finally {
      await srv.close();
    }
    assert.equal(await cliShards(dir), EMBEDDED_SHARDS);
  });

  test("SHARDS on a new DATA_DIR is recorded; a different one later stops the start", async () => {
    const dir = newDir();
    let srv = await boot(dir, 8);
    assert.equal(srv.shards, 8);
    await sendAndRead(srv, "placed over 8");
    await srv.close();
    await assert.rejects(boot(dir, 16), /SHARDS=16, but the data in .* is placed over 8 shards/);
    await assert.rejects(cliShards(dir, "16"), /placed over 8 shards/);
    // The refused start changed nothing: the directory still starts, on its own count.
    assert.equal(await cliShards(dir), 8);
    srv = await boot(dir);
    try {
      assert.equal(srv.shards, 8);
      assert.ok((await sendAndRead(srv, null)).some((c) => c.includes("placed over 8")));
    } finally {
      await srv.close();
    }
  });

  test("a DATA_DIR from before the record keeps the count it ran with", async () => {
    const dir = newDir();
    let srv = await boot(dir, 32);
    await sendAndRead(srv, "written over 32 shards");
    await srv.close();
    // As a directory of an earlier version: no record of the count.
    const env = open({ path: dir, maxDbs: 8 });
    const meta = env.openDB({ name: "meta" });
    await meta.remove(["shards"]);
    assert.equal(meta.get(["shards"]), undefined);
    await env.close();
    srv = await boot(dir);
    try {
      assert.equal(srv.shards, 32);
      assert.ok((await sendAndRead(srv, null)).some((c) => c.includes("written over 32 shards")));
    } finally {
      await srv.close();
    }
    assert.equal(await cliShards(dir), 32);
  });
});
