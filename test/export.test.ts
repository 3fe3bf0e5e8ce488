// Black-box tests of organization exports: GET/POST /export/realm,
// GET /export/realm/consents, the download at export_url, and the round
// trip through `manage restore` into a fresh data directory.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { entryArgs } from "../bench/procs.ts";
import { realmRef } from "../actors/index.ts";
import type { Obj } from "../actors/types.ts";
import { startEmbedded as startServer, type EmbeddedServer } from "../server.ts";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  makeApi,
  openQueue,
  startCluster,
  type Api,
  type Creds,
  type EmbeddedHandle,
  type Ev,
} from "./support/index.ts";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "..");
const OWNER = { email: "owner@example.com", password: "owner-password-1" };

interface Server {
  srv: EmbeddedServer;
  api: Api;
  owner: Creds & { userId: number };
  realmId: number;
}

/** `restored`: the data comes from an export, which carries no password: use the key restore made. */
async function startOn(dir: string, restored = false): Promise<Server> {
  const srv = await startServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: dir,
    shards: 16,
    bootstrap: {
      ownerEmail: OWNER.email,
      ownerPassword: OWNER.password,
      ownerName: "Olivia Owner",
      realmName: "Test Org",
      externalHost: "localhost",
    },
    singleOrganization: true,
  });
  const api0 = makeApi(srv.url, null);
  const realmId = srv.bootstrapped?.realmId ?? 0;
  if (restored) {
    const owner = {
      email: OWNER.email,
      apiKey: srv.bootstrapped!.apiKey!,
      userId: srv.bootstrapped!.userId!,
    };
    return { srv, api: makeApi(srv.url, owner), owner, realmId };
  }
  const key = await api0("POST", "/fetch_api_key", { username: OWNER.email, password: OWNER.password });
  assertSuccess(key);
  const owner = {
    email: OWNER.email,
    apiKey: key.body.api_key as string,
    userId: key.body.user_id as number,
  };
  return { srv, api: makeApi(srv.url, owner), owner, realmId };
}

/** A user's credentials in a restored organization (restore gave everyone a new API key). */
async function keyOn(s: Server, email: string): Promise<Creds & { userId: number }> {
  const r = (await s.srv.node.call(realmRef(s.realmId), "apiKey", { email }))!;
  return { email, apiKey: r.apiKey, userId: r.userId };
}

function manage(dataDir: string, ...args: string[]) {
  return run(process.execPath, [...entryArgs("manage.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, NATS_URL: "" },
  });
}

/** 60 messages to `channel`: more than a conversation keeps in its state (its recent window). */
async function sendBulk(api: Api, channel: string): Promise<void> {
  for (let i = 0; i < 60; i++)
    assertSuccess(
      await api("POST", "/messages", { type: "stream", to: channel, topic: "bulk", content: `bulk ${i}` }),
    );
}

async function waitDone(api: Api, id: number): Promise<Obj> {
  for (let i = 0; i < 200; i++) {
    const r = await api("GET", "/export/realm");
    assertSuccess(r);
    const row = (r.body.exports as Obj[]).find((e) => e.id === id);
    if (row && row.pending === false) return row;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`export ${id} still pending`);
}

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "zulip-export-"));
  dirs.push(d);
  return d;
}

let a: Server;
let member: Creds & { userId: number };
let admin: Creds & { userId: number };

before(async () => {
  a = await startOn(tempDir());
  const mk = async (email: string, role: number) => {
    const r = (await a.srv.node.call(realmRef(a.realmId), "createUser", {
      email,
      password: `pw-${email}-x`,
      fullName: email.split("@")[0]!,
      role,
    })) as { userId: number; apiKey: string };
    return { email, apiKey: r.apiKey, userId: r.userId };
  };
  member = await mk("member@example.com", 400);
  admin = await mk("admin@example.com", 200);
});

after(async () => {
  await a?.srv.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("export - permissions and errors", () => {
  test("members may not list, create or read consents; bad export_type changes nothing", async () => {
    for (const [method, path] of [
      ["GET", "/export/realm"],
      ["POST", "/export/realm"],
      ["GET", "/export/realm/consents"],
    ] as const) {
      assertError(
        await a.api(method, path, {}, member),
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      );
      const anon = await a.api(method, path, {}, null);
      assert.equal(anon.status, 401);
    }
    // Strings since feature level 449; the integers of earlier levels still work.
    for (const bad of [3, "x", "1.5", "full_without_consent", "__proto__"])
      assertError(await a.api("POST", "/export/realm", { export_type: bad }), "Invalid export type.");
    const r = await a.api("GET", "/export/realm");
    assertSuccess(r);
    assert.deepEqual(r.body.exports, []);
  });

  test("consents: every active human with allow_private_data_export", async () => {
    assertSuccess(await a.api("PATCH", "/settings", { allow_private_data_export: true }, member));
    const r = await a.api("GET", "/export/realm/consents", {}, admin);
    assertSuccess(r);
    const byId = new Map((r.body.export_consents as Obj[]).map((c) => [c.user_id, c.consented]));
    assert.equal(byId.get(member.userId), true);
    assert.equal(byId.get(admin.userId), false);
    assert.equal(byId.get(a.owner.userId), false);
  });
});

describe("export - round trip", () => {
  test("export, download, restore into a fresh store, same data, new API keys, new ids above", async () => {
    const api = a.api;
    // Data: a channel, messages with a star, a reaction and an edit, a DM.
    const ch = await api("POST", "/channels/create", {
      name: "exported",
      subscribers: JSON.stringify([a.owner.userId, member.userId]),
    });
    assertSuccess(ch);
    const ids: number[] = [];
    for (const content of ["first", "second", "third"]) {
      const s = await api("POST", "/messages", { type: "stream", to: "exported", topic: "t", content });
      assertSuccess(s);
      ids.push(s.body.id as number);
    }
    // More than a conversation keeps in its state: the first three live only in store records.
    await sendBulk(api, "exported");
    const dm = await api("POST", "/messages", {
      type: "private",
      to: JSON.stringify([member.userId]),
      content: "hi",
    });
    assertSuccess(dm);
    ids.push(dm.body.id as number);
    assertSuccess(
      await api(
        "POST",
        "/messages/flags",
        { messages: JSON.stringify([ids[0]]), op: "add", flag: "starred" },
        member,
      ),
    );
    assertSuccess(await api("POST", `/messages/${ids[1]}/reactions`, { emoji_name: "smile" }, member));
    assertSuccess(await api("PATCH", `/messages/${ids[2]}`, { content: "third, edited" }));
    const handle = { api } as EmbeddedHandle;
    const ownerQ = await openQueue(handle, a.owner, ["realm_export"]);
    const memberQ = await openQueue(handle, member, ["realm_export"]);

    // Full with consent: the member consented (above), so the direct message is in it.
    const created = await api("POST", "/export/realm", { export_type: "full_with_consent" }, admin);
    assertSuccess(created);
    const id = created.body.id as number;
    const row = await waitDone(api, id);
    assert.equal(row.acting_user_id, admin.userId);
    assert.equal(row.export_type, "full_with_consent");
    assert.equal(row.failed_timestamp, null);
    assert.equal(row.deleted_timestamp, null);
    assert.equal(typeof row.export_time, "number");
    const url = row.export_url as string;
    assert.match(url, new RegExp(`^/user_avatars/exports/${a.realmId}/[A-Za-z0-9_-]+/zulip-export-`));

    // Administrators get realm_export (pending, then done); members nothing.
    const evs = await eventsUntil(handle, ownerQ, (e) =>
      e.some((x: Ev) => x.exports?.[0]?.pending === false),
    );
    assert.deepEqual(
      evs.map((e: Ev) => e.exports[0].pending),
      [true, false],
    );
    assert.equal(evs[1].exports[0].export_url, url);
    assert.deepEqual(await eventsUntil(handle, memberQ, () => false), []);

    // The download: administrators only, the exact path only.
    const file = await fetch(a.srv.url + url, {
      headers: { authorization: "Basic " + Buffer.from(`${admin.email}:${admin.apiKey}`).toString("base64") },
    });
    assert.equal(file.status, 200);
    assert.equal(file.headers.get("content-type"), "application/gzip");
    const bytes = Buffer.from(await file.arrayBuffer());
    const lines = gunzipSync(bytes)
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Obj);
    assert.equal((lines[0]!.manifest as Obj).realmId, a.realmId);
    assert.ok(lines.some((l) => l.counter === `message.${a.realmId}`));
    assert.ok(lines.at(-1)!.trailer);
    const asMember = await a.api("GET", url, {}, member);
    assert.notEqual(asMember.status, 200);
    const wrong = await fetch(a.srv.url + url.replace(/\/[^/]+\/zulip-export/, "/nope/zulip-export"), {
      headers: { authorization: "Basic " + Buffer.from(`${admin.email}:${admin.apiKey}`).toString("base64") },
    });
    assert.equal(wrong.status, 404);
    assert.equal((await fetch(a.srv.url + url)).status, 401);

    const before = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0 }, member);
    assertSuccess(before);

    // Restore into a fresh data directory with the management CLI.
    const dirB = tempDir();
    const saved = join(dirB, "..", `${id}-${Date.now()}.jsonl.gz`);
    writeFileSync(saved, bytes);
    const restored = JSON.parse((await manage(dirB, "restore", saved)).stdout) as Obj;
    rmSync(saved);
    assert.equal(restored.realmId, a.realmId);
    assert.ok((restored.actors as number) > 0);

    const b = await startOn(dirB, true);
    try {
      // No credentials travel: old API keys and passwords do not work, restore made new keys.
      assert.notEqual(b.owner.apiKey, a.owner.apiKey);
      assert.equal((await makeApi(b.srv.url, a.owner)("GET", "/users/me")).status, 401);
      assertError(
        await makeApi(b.srv.url, null)("POST", "/fetch_api_key", {
          username: OWNER.email,
          password: OWNER.password,
        }),
        "Your username or password is incorrect",
        "AUTHENTICATION_FAILED",
        401,
      );
      const apiB = makeApi(b.srv.url, await keyOn(b, member.email));
      const after = await apiB("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0 });
      assertSuccess(after);
      assert.deepEqual(after.body.messages, before.body.messages);
      const m = (after.body.messages as Obj[]).find((x) => x.id === ids[0])!;
      assert.ok((m.flags as string[]).includes("starred"));
      const edited = (after.body.messages as Obj[]).find((x) => x.id === ids[2])!;
      assert.match(edited.content as string, /third, edited/);
      const sent = await apiB("POST", "/messages", {
        type: "stream",
        to: "exported",
        topic: "t",
        content: "new",
      });
      assertSuccess(sent);
      assert.ok((sent.body.id as number) > Math.max(...ids));
      // The export that made the file is over in the restored organization.
      const rows = await b.api("GET", "/export/realm");
      assertSuccess(rows);
      assert.ok((rows.body.exports as Obj[]).every((e) => e.pending === false));
    } finally {
      await b.srv.close();
    }
    // A store that has the organization refuses a second restore.
    writeFileSync(saved, bytes);
    await assert.rejects(manage(dirB, "restore", saved), /already has organization/);
    rmSync(saved);
    await assert.rejects(manage(dirB, "restore"), /restore needs the export file/);
  });

  test("at most 5 exports in 7 days", async () => {
    const existing = ((await a.api("GET", "/export/realm")).body.exports as Obj[]).length;
    const made: number[] = [];
    for (let i = existing; i < 5; i++) {
      const r = await a.api("POST", "/export/realm", { export_type: 2 });
      assertSuccess(r);
      made.push(r.body.id as number);
    }
    assertError(await a.api("POST", "/export/realm"), "Exceeded rate limit.");
    for (const id of made) assert.equal((await waitDone(a.api, id)).export_type, "full_with_consent");
  });
});

describe("export - cluster mode", () => {
  test("nodes write the export to the shared DATA_DIR, the gateway serves it, it restores", async () => {
    const shared = tempDir();
    const cluster = await startCluster({ nodes: ["n1", "n2"], env: { DATA_DIR: shared } });
    let bytes: Buffer;
    let before: Obj;
    try {
      const api = cluster.api;
      assertSuccess(await api("POST", "/channels/create", { name: "clustered", subscribers: "[]" }));
      const ids: number[] = [];
      for (const content of ["one", "two"]) {
        const s = await api("POST", "/messages", { type: "stream", to: "clustered", topic: "t", content });
        assertSuccess(s);
        ids.push(s.body.id as number);
      }
      // More than a conversation keeps in its state, so the restored store
      // must have the first ones' records where its own shard count (16
      // here, against the cluster's 32) places their conversation.
      await sendBulk(api, "clustered");
      assertSuccess(
        await api("POST", "/messages/flags", { messages: JSON.stringify(ids), op: "add", flag: "starred" }),
      );
      const created = await api("POST", "/export/realm", { export_type: 2 });
      assertSuccess(created);
      const row = await waitDone(api, created.body.id as number);
      assert.equal(row.failed_timestamp, null);
      const res = await fetch(cluster.baseUrl + (row.export_url as string), {
        headers: {
          authorization:
            "Basic " + Buffer.from(`${cluster.owner.email}:${cluster.owner.apiKey}`).toString("base64"),
        },
      });
      assert.equal(res.status, 200);
      bytes = Buffer.from(await res.arrayBuffer());
      const r = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0 });
      assertSuccess(r);
      before = r.body;
    } finally {
      await cluster.stop();
    }
    // A Redis export restores into an embedded store.
    const dir = tempDir();
    const saved = join(dir, "..", `cluster-${Date.now()}.jsonl.gz`);
    writeFileSync(saved, bytes);
    try {
      await manage(dir, "restore", saved);
    } finally {
      rmSync(saved);
    }
    const b = await startOn(dir, true);
    try {
      assert.equal(b.srv.shards, 16);
      assert.notEqual(cluster.shards, 16);
      assert.notEqual(b.owner.apiKey, cluster.owner.apiKey);
      const r = await b.api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0 });
      assertSuccess(r);
      assert.deepEqual(r.body.messages, before.messages);
    } finally {
      await b.srv.close();
    }
  });
});

describe("export - types", () => {
  test("public: public channels only, no DMs, no personal data; consent: also consenting users' private data; never credentials", async () => {
    const c = await startOn(tempDir());
    try {
      const mk = async (email: string) => {
        const r = (await c.srv.node.call(realmRef(c.realmId), "createUser", {
          email,
          password: `pw-${email}-x`,
          fullName: email.split("@")[0]!,
          role: 400,
        })) as { userId: number; apiKey: string };
        return { email, apiKey: r.apiKey, userId: r.userId };
      };
      const alice = await mk("alice@example.com");
      const bob = await mk("bob@example.com");
      assertSuccess(await c.api("PATCH", "/settings", { allow_private_data_export: true }, alice));
      const make = async (name: string, ids: number[], inviteOnly: boolean) =>
        assertSuccess(
          await c.api("POST", "/channels/create", {
            name,
            subscribers: JSON.stringify(ids),
            invite_only: JSON.stringify(inviteOnly),
          }),
        );
      await make("pub", [c.owner.userId, alice.userId, bob.userId], false);
      await make("priv-consented", [alice.userId, bob.userId], true);
      await make("priv-unconsented", [c.owner.userId, bob.userId], true);
      const send = async (who: Creds, to: string, content: string, dm = false) => {
        const r = await c.api(
          "POST",
          "/messages",
          dm ? { type: "private", to, content } : { type: "stream", to, topic: "t", content },
          who,
        );
        assertSuccess(r);
      };
      await send(alice, "pub", "public words");
      await send(alice, "priv-consented", "consented private words");
      await send(c.owner, "priv-unconsented", "unconsented private words");
      // A topic setting names a private channel's topic: it goes with the channel.
      const privId = (await c.api("GET", "/get_stream_id", { stream: "priv-unconsented" })).body
        .stream_id as number;
      assertSuccess(
        await c.api(
          "POST",
          "/user_topics",
          { stream_id: privId, topic: "secret-topic-name", visibility_policy: 3 },
          bob,
        ),
      );
      await send(alice, JSON.stringify([bob.userId]), "consented dm words", true);
      await send(c.owner, JSON.stringify([bob.userId]), "unconsented dm words", true);
      const draft = (content: string) =>
        JSON.stringify([{ type: "", to: [], topic: "", content, timestamp: 1700000000 }]);
      assertSuccess(await c.api("POST", "/drafts", { drafts: draft("alice draft") }, alice));
      assertSuccess(await c.api("POST", "/drafts", { drafts: draft("bob draft") }, bob));

      const exportOf = async (exportType: number): Promise<Buffer> => {
        const r = await c.api("POST", "/export/realm", { export_type: exportType });
        assertSuccess(r);
        const row = await waitDone(c.api, r.body.id as number);
        const res = await fetch(c.srv.url + (row.export_url as string), {
          headers: {
            authorization: "Basic " + Buffer.from(`${c.owner.email}:${c.owner.apiKey}`).toString("base64"),
          },
        });
        assert.equal(res.status, 200);
        return Buffer.from(await res.arrayBuffer());
      };
      // Every byte the file carries, journals and records decoded: no credential in any of them.
      const allText = (file: Buffer): string => {
        const parts: string[] = [];
        for (const line of gunzipSync(file).toString("utf8").trim().split("\n")) {
          parts.push(line);
          const o = JSON.parse(line) as Obj;
          for (const [, b64] of (o.journal as [number, string][] | undefined) ?? [])
            parts.push(Buffer.from(b64, "base64").toString("latin1"));
          if (typeof o.value === "string") parts.push(Buffer.from(o.value, "base64").toString("latin1"));
        }
        return parts.join("\n");
      };
      const restore = async (file: Buffer): Promise<Server> => {
        const dir = tempDir();
        const saved = join(dir, "..", `types-${Date.now()}.jsonl.gz`);
        writeFileSync(saved, file);
        try {
          await manage(dir, "restore", saved);
        } finally {
          rmSync(saved);
        }
        return startOn(dir, true);
      };
      const contents = async (s: Server, email: string) => {
        const who = await keyOn(s, email);
        const api = makeApi(s.srv.url, who);
        const msgs = await api("GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0 });
        assertSuccess(msgs);
        const subs = await api("GET", "/users/me/subscriptions");
        assertSuccess(subs);
        const drafts = await api("GET", "/drafts");
        assertSuccess(drafts);
        return {
          messages: (msgs.body.messages as Obj[]).map((m) => (m.content as string).replace(/<\/?p>/g, "")),
          channels: (subs.body.subscriptions as Obj[]).map((x) => x.name).sort(),
          drafts: (drafts.body.drafts as Obj[]).map((d) => d.content),
        };
      };
      const secrets = [c.owner.apiKey, alice.apiKey, bob.apiKey, "scrypt$"];

      const pub = await exportOf(1);
      const pubText = allText(pub);
      for (const x of secrets) assert.ok(!pubText.includes(x), `public export holds ${x}`);
      for (const x of [
        "consented private words",
        "unconsented private words",
        "dm words",
        "priv-",
        "secret-topic",
      ])
        assert.ok(!pubText.includes(x), `public export holds ${x}`);
      assert.ok(pubText.includes("public words"));
      const p = await restore(pub);
      try {
        for (const email of [alice.email, bob.email]) {
          const got = await contents(p, email);
          assert.deepEqual(got.messages, ["public words"]);
          assert.deepEqual(got.channels, ["pub"]);
          assert.deepEqual(got.drafts, []);
        }
      } finally {
        await p.srv.close();
      }

      const full = await exportOf(2);
      const fullText = allText(full);
      for (const x of secrets) assert.ok(!fullText.includes(x), `full export holds ${x}`);
      for (const x of [
        "unconsented private words",
        "unconsented dm words",
        "priv-unconsented",
        "secret-topic-name",
        "bob draft",
      ])
        assert.ok(!fullText.includes(x), `full export holds ${x}`);
      const f = await restore(full);
      try {
        const a2 = await contents(f, alice.email);
        assert.deepEqual(a2.messages, ["public words", "consented private words", "consented dm words"]);
        assert.deepEqual(a2.channels, ["priv-consented", "pub"]);
        assert.deepEqual(a2.drafts, ["alice draft"]);
        const b2 = await contents(f, bob.email);
        assert.deepEqual(b2.messages, ["public words", "consented private words", "consented dm words"]);
        assert.deepEqual(b2.channels, ["priv-consented", "pub"]);
        assert.deepEqual(b2.drafts, []);
      } finally {
        await f.srv.close();
      }
    } finally {
      await c.srv.close();
    }
  });
});
