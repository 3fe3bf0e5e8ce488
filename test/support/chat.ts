// A real embedded server for the channel, message and topic tests, with
// the node's emitted events recorded (what the event queues consume) and
// users of any role made through the realm's internal createUser (the CLI
// path; no HTTP endpoint sets roles at creation).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach } from "node:test";
import { realmRef } from "../../actors/index.ts";
import type { OutEvent } from "../../actors/types.ts";
import { startEmbedded, type EmbeddedServer } from "../../server.ts";
import { makeApi, type Api, type Creds } from "./embedded.ts";

export type User = Creds & { userId: number; fullName: string };

/**
 * Whether an event the node emitted is for `userId`: listed, or in its
 * realm-wide audience (OutEvent.everyone) and not left out. The router
 * then delivers it if the user has a queue.
 */
export function reaches(e: OutEvent, userId: number): boolean {
  if (e.userIds.includes(userId)) return true;
  return e.everyone === true && !(e.except ?? []).includes(userId);
}

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

/**
 * A chat server for the enclosing suite (the file, or the describe it is
 * called in), started in before() and stopped in after(); the handle
 * forwards to it, so a file keeps it in a const. `clearEvents`: empty
 * `events` before each test.
 */
export function useChat(opts: { clearEvents?: boolean } = {}): Chat {
  let c: Chat | undefined;
  let starting: Promise<Chat> | undefined;
  before(async () => {
    starting = startChat();
    c = await starting;
  });
  after(async () => {
    await c?.stop();
  });
  if (opts.clearEvents) {
    beforeEach(() => {
      if (c) c.events.length = 0;
    });
  }
  // Node 20 runs a file's top-level before() hooks concurrently: the API
  // waits for the start, the fields are there once it is done.
  const live = (): Chat => {
    if (!c) throw new Error("the chat server starts in before(); until it is up, only its API can be called");
    return c;
  };
  const started = async (): Promise<Chat> => {
    if (!starting) throw new Error("the chat server starts in before()");
    return c ?? (await starting);
  };
  return {
    get srv() {
      return live().srv;
    },
    get owner() {
      return live().owner;
    },
    get events() {
      return live().events;
    },
    api: async (...a) => (await started()).api(...a),
    newUser: async (...a) => (await started()).newUser(...a),
    stop: () => live().stop(),
  };
}
