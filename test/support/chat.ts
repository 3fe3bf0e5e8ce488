// A real embedded server for the channel, message and topic tests, with
// the node's emitted events recorded (what the event queues consume) and
// users of any role made through the realm's internal createUser (the CLI
// path; no HTTP endpoint sets roles at creation).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realmRef } from "../../actors/index.ts";
import type { Obj, OutEvent } from "../../actors/types.ts";
import { startEmbedded, type EmbeddedServer } from "../../server.ts";
import { makeApi, type Api, type ApiResult, type Creds } from "./embedded.ts";

export type User = Creds & { userId: number; fullName: string };

export interface Chat {
  srv: EmbeddedServer;
  api: Api;
  owner: User;
  events: OutEvent[];
  newUser(role?: number, name?: string): Promise<User>;
  stop(): Promise<void>;
}

let seq = 0;

export async function startChat(): Promise<Chat> {
  const dir = mkdtempSync(join(tmpdir(), "zulip-chat-"));
  const srv = await startEmbedded({
    port: 0,
    host: "127.0.0.1",
    dataDir: dir,
    shards: 8,
    bootstrap: {
      ownerEmail: "owner@example.com",
      ownerPassword: "owner-password-1",
      ownerName: "Olivia Owner",
      realmName: "Test Org",
      externalHost: "localhost",
    },
  });
  const b = srv.bootstrapped!;
  const owner: User = {
    email: "owner@example.com",
    apiKey: b.apiKey!,
    userId: b.userId!,
    fullName: "Olivia Owner",
  };
  const chat: Chat = {
    srv,
    api: makeApi(srv.url, owner),
    owner,
    events: [],
    async newUser(role = 400, name?: string) {
      const n = ++seq;
      const email = `user${n}@example.com`;
      const fullName = name ?? `User Number${n}`;
      const r = (await srv.node.call(realmRef(b.realmId), "createUser", {
        email,
        password: `pw-${n}-secret-x`,
        fullName,
        role,
      })) as { userId: number; apiKey: string };
      return { email, apiKey: r.apiKey, userId: r.userId, fullName };
    },
    async stop() {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  srv.node.onEvents((_ref, out) => chat.events.push(...out));
  return chat;
}

export function ok(res: ApiResult): Obj {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.result, "success");
  assert.equal(res.body.msg, "");
  return res.body;
}

export function err(res: ApiResult, msg: string, code = "BAD_REQUEST", status = 400): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.result, "error");
  assert.equal(res.body.msg, msg);
  assert.equal(res.body.code, code);
}

export function uniq(prefix = "chan"): string {
  return `${prefix} ${++seq}`;
}
