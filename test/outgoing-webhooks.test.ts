// Outgoing webhook bots: a real local HTTP receiver on a free port, the
// exact JSON it gets, the bot's replies, Zulip's failure behaviour, and the
// outbox's at-most-once rule (docs/webhooks.md).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ZULIP_VERSION, realmRef, webhookIndexRef, webhookRef } from "../actors/index.ts";
import type { ActorContext, ActorRef, Behavior, Obj, OutEvent } from "../actors/types.ts";
import { webhookBehavior } from "../actors/webhook/index.ts";
import { webhookIndexBehavior } from "../actors/webhook-index/index.ts";
import { startEmbedded, type EmbeddedServer } from "../server.ts";
import { assertError, assertSuccess, makeApi, waitFor, type Api, type Creds } from "./support/index.ts";

const TIMEOUT_MS = 600;

interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type Responder = (req: Received, res: ServerResponse) => void | Promise<void>;

/** The bot's server: per path, a queue of responders (the last one repeats). */
class Receiver {
  server!: Server;
  port = 0;
  readonly got: Received[] = [];
  private readonly plans = new Map<string, Responder[]>();
  private waiters: (() => void)[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r: Received = {
          path: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        };
        this.got.push(r);
        for (const w of this.waiters.splice(0)) w();
        const plan = this.plans.get(r.path) ?? [];
        const step = plan.length > 1 ? plan.shift()! : plan[0];
        if (!step) return json(res, 200, { response_not_required: true });
        void step(r, res);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  plan(path: string, ...steps: Responder[]): void {
    this.plans.set(path, steps);
  }

  on(path: string): Received[] {
    return this.got.filter((r) => r.path === path);
  }

  async waitFor(path: string, n: number, ms = 15_000): Promise<Received[]> {
    const until = Date.now() + ms;
    while (this.on(path).length < n) {
      if (Date.now() > until) throw new Error(`${path}: ${this.on(path).length} of ${n} requests`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return this.on(path);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

let srv: EmbeddedServer;
let api: Api;
let dir: string;
let owner: Creds & { userId: number };
let realmId: number;
const rx = new Receiver();
const events: OutEvent[] = [];
let seq = 0;

before(async () => {
  await rx.start();
  dir = mkdtempSync(join(tmpdir(), "zulip-webhooks-"));
  srv = await startEmbedded({
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
    // The receivers listen on loopback, which bots may not reach by default.
    webhooks: {
      timeoutMs: TIMEOUT_MS,
      retryBaseMs: 20,
      maxResponseBytes: 64 * 1024,
      allowedNetworks: ["127.0.0.0/8"],
    },
  });
  const b = srv.bootstrapped!;
  realmId = b.realmId!;
  owner = { email: "owner@example.com", apiKey: b.apiKey!, userId: b.userId! };
  api = makeApi(srv.url, owner);
  srv.node.onEvents((_ref, out) => events.push(...out));
});

after(async () => {
  await srv.close();
  await rx.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Bot {
  userId: number;
  email: string;
  fullName: string;
  token: string;
  path: string;
}

async function makeBot(opts: { interfaceType?: number; name?: string } = {}): Promise<Bot> {
  const n = ++seq;
  const path = `/hook${n}`;
  const fullName = opts.name ?? `Hook Bot${n}`;
  const res = await api("POST", "/bots", {
    full_name: fullName,
    short_name: `hook${n}`,
    bot_type: 3,
    payload_url: JSON.stringify(rx.url(path)),
    interface_type: opts.interfaceType ?? 1,
  });
  assertSuccess(res);
  const info = (await srv.node.call(realmRef(realmId), "webhookBot", { botId: res.body.user_id })) as Obj;
  const service = info.service as Obj;
  return {
    userId: res.body.user_id as number,
    email: info.email as string,
    fullName,
    token: service.token as string,
    path,
  };
}

async function channel(): Promise<{ id: number; name: string }> {
  const name = `hooks ${++seq}`;
  const r = await api("POST", "/channels/create", { name, subscribers: [owner.userId] });
  assertSuccess(r);
  return { id: r.body.id as number, name };
}

async function send(params: Obj): Promise<number> {
  const r = await api("POST", "/messages", params);
  assertSuccess(r);
  return r.body.id as number;
}

/** Messages the bot sent (from the message events the node emitted). */
function botMessages(botId: number): Obj[] {
  return events
    .filter((e) => e.event.type === "message" && (e.event.message as Obj).sender_id === botId)
    .map((e) => e.event.message as Obj);
}

async function waitBotMessages(botId: number, n: number, ms = 15_000): Promise<Obj[]> {
  await waitFor(() => botMessages(botId).length >= n, {
    timeoutMs: ms,
    stepMs: 25,
    what: `${n} messages of bot ${botId}`,
  });
  return botMessages(botId);
}

async function outbox(botId: number) {
  return await srv.node.call(webhookRef(realmId, botId), "outbox", {});
}

async function settled(botId: number, messageId: number): Promise<void> {
  await waitFor(
    async () => {
      const o = await outbox(botId);
      return o.recent.includes(messageId) && !o.pending.length;
    },
    { timeoutMs: 15_000, stepMs: 25, what: `delivery ${messageId} to finish` },
  );
}

const MESSAGE_KEYS = [
  "avatar_url",
  "client",
  "content",
  "content_type",
  "display_recipient",
  "id",
  "is_me_message",
  "reactions",
  "recipient_id",
  "rendered_content",
  "sender_email",
  "sender_full_name",
  "sender_id",
  "sender_realm_str",
  "subject",
  "submessages",
  "timestamp",
  "topic_links",
  "type",
];

describe("outgoing webhooks - payload and replies", () => {
  test("a mention in a channel POSTs the exact JSON; the reply's content is posted in the topic", async () => {
    const bot = await makeBot();
    const ch = await channel();
    rx.plan(bot.path, (_r, res) => json(res, 200, { content: "pong from the bot" }));
    const content = `hello @**${bot.fullName}**`;
    const id = await send({ type: "stream", to: ch.name, topic: "pings", content });
    const [got] = await rx.waitFor(bot.path, 1);
    assert.equal(got!.headers["content-type"], "application/json");
    assert.equal(got!.headers["user-agent"], `ZulipOutgoingWebhook/${ZULIP_VERSION}`);
    assert.match(String(got!.headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const body = JSON.parse(got!.body);
    assert.deepEqual(Object.keys(body), [
      "data",
      "message",
      "bot_email",
      "bot_full_name",
      "token",
      "trigger",
    ]);
    assert.equal(body.data, content);
    assert.equal(body.bot_email, bot.email);
    assert.equal(body.bot_full_name, bot.fullName);
    assert.equal(body.token, bot.token);
    assert.equal(body.trigger, "mention");
    const m = body.message;
    assert.deepEqual(Object.keys(m).sort(), [...MESSAGE_KEYS, "stream_id"].sort());
    assert.equal(m.id, id);
    assert.equal(m.content, content);
    assert.equal(m.content_type, "text/x-markdown");
    assert.match(m.rendered_content, /<span class="user-mention" data-user-id="\d+">@Hook Bot\d+<\/span>/);
    assert.equal(m.display_recipient, ch.name);
    assert.equal(m.stream_id, ch.id);
    assert.equal(m.subject, "pings");
    assert.equal(m.type, "stream");
    assert.equal(m.sender_id, owner.userId);
    assert.equal(m.sender_email, owner.email);
    assert.match(m.avatar_url, /^https:\/\/secure\.gravatar\.com\//);
    const [reply] = await waitBotMessages(bot.userId, 1);
    assert.equal(reply!.content, "pong from the bot");
    assert.equal(reply!.stream_id, ch.id);
    assert.equal(reply!.subject, "pings");
    assert.equal(reply!.client, "OutgoingWebhookResponse");
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 1);
  });

  test("a direct message triggers 'direct_message'; response_not_required posts nothing", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => json(res, 200, { response_not_required: true }));
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "just fyi" });
    const [got] = await rx.waitFor(bot.path, 1);
    const body = JSON.parse(got!.body);
    assert.equal(body.trigger, "direct_message");
    assert.equal(body.data, "just fyi");
    assert.deepEqual(Object.keys(body.message).sort(), MESSAGE_KEYS);
    assert.equal(body.message.type, "private");
    assert.deepEqual(
      (body.message.display_recipient as Obj[]).map((r) => r.id).sort(),
      [owner.userId, bot.userId].sort(),
    );
    await settled(bot.userId, id);
    assert.equal(botMessages(bot.userId).length, 0);
  });

  test("a DM reply goes back to the same conversation", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => json(res, 200, { content: "hi back" }));
    await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "hi" });
    const [reply] = await waitBotMessages(bot.userId, 1);
    assert.equal(reply!.type, "private");
    assert.equal(reply!.content, "hi back");
    assert.deepEqual(
      (reply!.display_recipient as Obj[]).map((r) => r.id).sort(),
      [owner.userId, bot.userId].sort(),
    );
  });

  test("silent mentions and generic bots trigger nothing", async () => {
    const bot = await makeBot();
    const ch = await channel();
    await send({ type: "stream", to: ch.name, topic: "t", content: `quiet @_**${bot.fullName}**` });
    const generic = await api("POST", "/bots", { full_name: "Plain Bot", short_name: "plainbot" });
    assertSuccess(generic);
    await send({ type: "stream", to: ch.name, topic: "t", content: "hi @**Plain Bot**" });
    // Barrier: a later trigger of the same bot arrives first.
    rx.plan(bot.path, (_r, res) => json(res, 200, { response_not_required: true }));
    await send({ type: "stream", to: ch.name, topic: "t", content: `loud @**${bot.fullName}**` });
    const got = await rx.waitFor(bot.path, 1);
    assert.equal(got.length, 1);
    assert.equal(JSON.parse(got[0]!.body).data, `loud @**${bot.fullName}**`);
  });

  test("the Slack-compatible interface sends Zulip's form fields", async () => {
    const bot = await makeBot({ interfaceType: 2 });
    const ch = await channel();
    rx.plan(bot.path, (_r, res) => json(res, 200, { text: "slack says hi" }));
    const content = `@**${bot.fullName}** slack?`;
    const id = await send({ type: "stream", to: ch.name, topic: "s", content });
    const [got] = await rx.waitFor(bot.path, 1);
    assert.equal(got!.headers["content-type"], "application/x-www-form-urlencoded");
    const form = [...new URLSearchParams(got!.body)];
    const ts = form.find(([k]) => k === "timestamp")![1];
    assert.deepEqual(form, [
      ["token", bot.token],
      ["team_id", `T${realmId}`],
      ["team_domain", "localhost"],
      ["channel_id", `C${ch.id}`],
      ["channel_name", ch.name],
      ["thread_ts", ts],
      ["timestamp", ts],
      ["user_id", `U${owner.userId}`],
      ["user_name", "Olivia Owner"],
      ["text", content],
      ["trigger_word", "mention"],
      ["service_id", String(bot.userId)],
    ]);
    const [reply] = await waitBotMessages(bot.userId, 1);
    assert.equal(reply!.content, "slack says hi");
    await settled(bot.userId, id);
  });

  test("the Slack-compatible interface refuses direct messages without a request", async () => {
    const bot = await makeBot({ interfaceType: 2 });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "dm" });
    const [reply] = await waitBotMessages(bot.userId, 1);
    assert.equal(reply!.content, "Failure! Slack outgoing webhooks don't support direct messages.");
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 0);
  });

  test("the send's response comes before the webhook answers", async () => {
    const bot = await makeBot();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    rx.plan(bot.path, async (_r, res) => {
      await held;
      json(res, 200, { content: "late" });
    });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "wait" });
    await rx.waitFor(bot.path, 1);
    assert.equal(botMessages(bot.userId).length, 0);
    release();
    await waitBotMessages(bot.userId, 1);
    await settled(bot.userId, id);
  });
});

function ownerNotices(botId: number): Obj[] {
  return botMessages(botId).filter(
    (m) => m.type === "private" && (m.display_recipient as Obj[]).some((r) => r.id === owner.userId),
  );
}

describe("outgoing webhooks - failures", () => {
  test("receiver down: 4 attempts, then 'Bot is unavailable' and the owner's notice", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const bot = await makeBot();
    assertSuccess(
      await api("PATCH", `/bots/${bot.userId}`, {
        service_payload_url: JSON.stringify(`http://127.0.0.1:${port}/down`),
      }),
    );
    const ch = await channel();
    const posts = srv.webhooks.stats.posts;
    const id = await send({
      type: "stream",
      to: ch.name,
      topic: "down",
      content: `@**${bot.fullName}** up?`,
    });
    const msgs = await waitBotMessages(bot.userId, 2);
    await settled(bot.userId, id);
    assert.equal(srv.webhooks.stats.posts - posts, 4);
    const inTopic = msgs.find((m) => m.type === "stream")!;
    assert.equal(inTopic.content, "Failure! Bot is unavailable");
    assert.equal(inTopic.subject, "down");
    const notice = msgs.find((m) => m.type === "private")!;
    const slug = `${ch.id}-${ch.name.replace(/ /g, "-")}`;
    assert.equal(
      notice.content,
      `[A message](http://localhost/#narrow/channel/${slug}/topic/down/near/${id}) to your bot ` +
        `@_**${bot.fullName}** triggered an outgoing webhook.\n` +
        "A connection error occurred. Is my bot server down?",
    );
    assert.deepEqual(
      (notice.display_recipient as Obj[]).map((r) => r.id).sort(),
      [owner.userId, bot.userId].sort(),
    );
  });

  test("slow past the timeout: retried, then the timeout notice", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => {
      setTimeout(() => json(res, 200, { content: "too late" }), TIMEOUT_MS * 3).unref();
    });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "slow?" });
    await rx.waitFor(bot.path, 4, 30_000);
    const msgs = await waitBotMessages(bot.userId, 2, 30_000);
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 4);
    assert.equal(msgs.filter((m) => m.content === "Failure! Bot is unavailable").length, 1);
    const notice = ownerNotices(bot.userId).find((m) => String(m.content).startsWith("[A message]"))!;
    assert.ok(
      String(notice.content).endsWith(`\nRequest timed out after ${TIMEOUT_MS / 1000} seconds.`),
      String(notice.content),
    );
    assert.ok(!msgs.some((m) => m.content === "too late"));
  });

  test("500s then success: the same payload again, one reply", async () => {
    const bot = await makeBot();
    const ch = await channel();
    rx.plan(
      bot.path,
      (_r, res) => json(res, 500, { error: "boom" }),
      (_r, res) => json(res, 503, { error: "busy" }),
      (_r, res) => json(res, 200, { content: "third time lucky" }),
    );
    const id = await send({
      type: "stream",
      to: ch.name,
      topic: "flaky",
      content: `@**${bot.fullName}** go`,
    });
    const [reply] = await waitBotMessages(bot.userId, 1);
    await settled(bot.userId, id);
    const got = rx.on(bot.path);
    assert.equal(got.length, 3);
    assert.equal(got[1]!.body, got[0]!.body);
    assert.equal(got[2]!.body, got[0]!.body);
    assert.equal(reply!.content, "third time lucky");
    assert.equal(botMessages(bot.userId).length, 1);
  });

  test("5xx every time: 4 attempts, then Zulip's status failure and notice", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end("bad gateway");
    });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "x" });
    await waitBotMessages(bot.userId, 2);
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 4);
    const [fail, notice] = botMessages(bot.userId);
    assert.equal(fail!.content, "Failure! Third party responded with 502");
    assert.ok(
      String(notice!.content).endsWith(
        "\nThe webhook got a response with status code *502*.\n" +
          "The response contains the following payload:\n```\nb'bad gateway'\n```",
      ),
      String(notice!.content),
    );
  });

  test("a 4xx is not retried", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => json(res, 404, {}));
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "x" });
    const [fail] = await waitBotMessages(bot.userId, 2);
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 1);
    assert.equal(fail!.content, "Failure! Third party responded with 404");
  });

  test("malformed replies: invalid JSON and a non-object", async () => {
    const bot = await makeBot();
    rx.plan(
      bot.path,
      (_r, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("not json");
      },
      (_r, res) => json(res, 200, [1, 2]),
    );
    const id1 = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "one" });
    await settled(bot.userId, id1);
    const id2 = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "two" });
    await settled(bot.userId, id2);
    const msgs = botMessages(bot.userId);
    assert.equal(msgs.length, 4);
    assert.equal(msgs[0]!.content, "Failure! Invalid JSON in response");
    assert.ok(
      String(msgs[1]!.content).endsWith(
        "\nThe outgoing webhook server attempted to send a message in Zulip, but that request " +
          "resulted in the following error:\n> Invalid JSON in response\n" +
          "The response contains the following payload:\n```\n'not json'\n```",
      ),
      String(msgs[1]!.content),
    );
    assert.equal(msgs[2]!.content, "Failure! Invalid response format");
    assert.equal(rx.on(bot.path).length, 2);
  });

  test("a redirect is not followed", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => {
      res.writeHead(302, { location: rx.url("/elsewhere") });
      res.end();
    });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "go" });
    await waitBotMessages(bot.userId, 2);
    await settled(bot.userId, id);
    assert.equal(rx.on("/elsewhere").length, 0);
    assert.equal(botMessages(bot.userId)[0]!.content, "Failure! Third party responded with 302");
  });

  test("an oversized response is refused", async () => {
    const bot = await makeBot();
    rx.plan(bot.path, (_r, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      // Streamed without a length, so the cap applies while reading.
      res.write('{"content": "');
      res.write("x".repeat(100 * 1024));
      res.end('"}');
    });
    const id = await send({ type: "direct", to: JSON.stringify([bot.userId]), content: "big" });
    await waitBotMessages(bot.userId, 2);
    await settled(bot.userId, id);
    assert.equal(rx.on(bot.path).length, 1);
    const [fail, notice] = botMessages(bot.userId);
    assert.equal(
      fail!.content,
      "Failure! An exception of type *ResponseTooLarge* occurred for message `big`! " +
        "See the Zulip server logs for more information.",
    );
    assert.match(String(notice!.content), /an exception of type ResponseTooLarge occurred/);
  });
});

describe("outgoing webhooks - bots' settings", () => {
  test("payload_url must be http(s); nothing changes on refusal", async () => {
    for (const url of ["ftp://example.com/x", "javascript:alert(1)", "not a url"]) {
      assertError(
        await api("POST", "/bots", {
          full_name: "Bad Url Bot",
          short_name: "badurl",
          bot_type: 3,
          payload_url: JSON.stringify(url),
        }),
        "payload_url is not a URL",
      );
    }
    const bots = await api("GET", "/bots");
    assert.ok(!bots.body.bots.some((b: Obj) => b.full_name === "Bad Url Bot"));
    const bot = await makeBot();
    assertError(
      await api("PATCH", `/bots/${bot.userId}`, {
        service_payload_url: JSON.stringify("file:///etc/passwd"),
      }),
      "service_payload_url is not a URL",
    );
    const info = (await srv.node.call(realmRef(realmId), "webhookBot", { botId: bot.userId })) as Obj;
    assert.equal((info.service as Obj).baseUrl, rx.url(bot.path));
  });

  test("the token reaches the owner only", async () => {
    const bot = await makeBot();
    const r = await api("POST", "/users", {
      email: `other${++seq}@example.com`,
      password: "other-password-1",
      full_name: "Other Person",
    });
    assertSuccess(r);
    const key = await api(
      "POST",
      "/fetch_api_key",
      { username: `other${seq}@example.com`, password: "other-password-1" },
      null,
    );
    assertSuccess(key);
    const other = { email: key.body.email as string, apiKey: key.body.api_key as string };
    const reg = await api("POST", "/register", {}, other);
    assertSuccess(reg);
    assert.ok(!JSON.stringify(reg.body).includes(bot.token));
    const list = await api("GET", "/bots", {}, other);
    assertSuccess(list);
    assert.ok(!JSON.stringify(list.body).includes(bot.token));
    const mine = await api("POST", "/register", { fetch_event_types: JSON.stringify(["realm_bot"]) });
    assertSuccess(mine);
    const entry = (mine.body.realm_bots as Obj[]).find((b) => b.user_id === bot.userId)!;
    assert.deepEqual(entry.services, [{ base_url: rx.url(bot.path), interface: 1, token: bot.token }]);
  });
});

describe("outgoing webhooks - the outbox", () => {
  // The behaviour alone, with a clock the test controls: what a node that
  // died mid-request leaves behind, and what the next activation does.
  interface Recorded {
    calls: { ref: string; method: string; args: Obj }[];
    timers: { key: string; delayMs: number; method: string }[];
  }
  function fakeCtx(now: { t: number }, rec: Recorded = { calls: [], timers: [] }, botId = 9): ActorContext {
    return {
      self: webhookRef(1, botId),
      now: () => now.t,
      // The only call a bot makes: marking itself in the realm's index.
      call: (ref: ActorRef, method: string, args: Obj) => {
        rec.calls.push({ ref: `${ref.kind}.${ref.realm}.${ref.key}`, method, args });
        return Promise.resolve({ marked: true });
      },
      nextId: () => Promise.reject(new Error("no ids")),
      schedule: (key, delayMs, method) => void rec.timers.push({ key, delayMs, method }),
      parked: () => [],
    };
  }

  async function turn(state: unknown, method: string, args: Obj, ctx: ActorContext) {
    const d = await webhookBehavior.handlers[method]!(state as never, args, ctx, null);
    let s = state as never;
    for (const f of d.facts ?? []) s = webhookBehavior.apply(s, f, ctx.self) as never;
    // Journal replay must give the same state: snapshot round trip.
    s = webhookBehavior.fromSnapshot(webhookBehavior.toSnapshot(s), ctx.self) as never;
    return { state: s, d };
  }

  test("one delivery per message; an attempt lost with its node is never re-sent", async () => {
    const now = { t: 1_000_000 };
    const ctx = fakeCtx(now);
    let s: unknown = webhookBehavior.initial(ctx.self);
    let r = await turn(s, "enqueue", { messageId: 5, trigger: "mention", message: { id: 5 } }, ctx);
    s = r.state;
    assert.deepEqual(r.d.reply, { queued: true });
    assert.equal(r.d.notices?.[0]?.subject, "webhook.ready");
    r = await turn(s, "enqueue", { messageId: 5, trigger: "mention", message: { id: 5 } }, ctx);
    s = r.state;
    assert.deepEqual(r.d.reply, { queued: false });
    r = await turn(s, "claim", { max: 10, timeoutMs: 1000 }, ctx);
    s = r.state;
    const claimed = (r.d.reply as Obj).deliveries as Obj[];
    assert.equal(claimed.length, 1);
    // Claimed = journaled as attempting before the worker sees it.
    assert.ok(r.d.facts!.some((f) => f.type === "claimed"));
    // The node dies. Later, the next activation (same journal) sweeps it.
    now.t += 1000 + 5_000 + 1;
    r = await turn(s, "poke", {}, ctx);
    s = r.state;
    assert.deepEqual(r.d.facts, [{ type: "finished", messageId: 5, outcome: "unknown" }]);
    r = await turn(s, "claim", { max: 10, timeoutMs: 1000 }, ctx);
    assert.deepEqual((r.d.reply as Obj).deliveries, []);
    // The late report of the lost attempt is refused; a new trigger is ignored.
    r = await turn(s, "report", { messageId: 5, attempt: 1, outcome: "done" }, ctx);
    assert.deepEqual(r.d.reply, { accepted: false });
    r = await turn(s, "enqueue", { messageId: 5, trigger: "mention", message: { id: 5 } }, ctx);
    assert.deepEqual(r.d.reply, { queued: false });
  });

  test("retries: up to 1 + 3 attempts, then exhausted; at most 4 in flight per bot", async () => {
    const now = { t: 5_000_000 };
    const ctx = fakeCtx(now);
    let s: unknown = webhookBehavior.initial(ctx.self);
    for (let id = 1; id <= 6; id++) {
      s = (await turn(s, "enqueue", { messageId: id, trigger: "direct_message", message: { id } }, ctx))
        .state;
    }
    let r = await turn(s, "claim", { max: 10, timeoutMs: 1000 }, ctx);
    s = r.state;
    assert.deepEqual(
      ((r.d.reply as Obj).deliveries as Obj[]).map((d) => d.messageId),
      [1, 2, 3, 4],
    );
    for (let attempt = 1; attempt <= 4; attempt++) {
      r = await turn(s, "report", { messageId: 1, attempt, outcome: "retry", retryAfterMs: 0 }, ctx);
      s = r.state;
      assert.deepEqual(r.d.reply, { accepted: true, exhausted: attempt === 4 });
      if (attempt < 4) {
        r = await turn(s, "claim", { max: 1, timeoutMs: 1000 }, ctx);
        s = r.state;
        assert.deepEqual(
          ((r.d.reply as Obj).deliveries as Obj[]).map((d) => [d.messageId, d.attempt]),
          [[1, attempt + 1]],
        );
      }
    }
  });
});

describe("outgoing webhooks - resuming after a crash (the realm's index)", () => {
  function ctxFor(ref: ActorRef, now: { t: number }, rec: { calls: Obj[]; timers: Obj[] }): ActorContext {
    return {
      self: ref,
      now: () => now.t,
      call: (to: ActorRef, method: string, args: Obj) => {
        rec.calls.push({ ref: `${to.kind}.${to.realm}.${to.key}`, method, args });
        return Promise.resolve({ marked: true });
      },
      nextId: () => Promise.reject(new Error("no ids")),
      schedule: (key, delayMs, method) => void rec.timers.push({ key, delayMs, method }),
      parked: () => [],
    };
  }

  /** The bots' kind, or the index's. */
  function behaviorOf(ref: ActorRef): Behavior<unknown> {
    return (ref.kind === "webhookIndex" ? webhookIndexBehavior : webhookBehavior) as Behavior<unknown>;
  }

  async function run(state: unknown, method: string, args: Obj, ctx: ActorContext) {
    const b = behaviorOf(ctx.self);
    const handler = b.handlers[method];
    if (!handler) throw new Error(`no method ${method} in the ${b.kind} kind`);
    const d = await handler(state, args, ctx, null);
    let s = state;
    for (const f of d.facts ?? []) s = b.apply(s, f, ctx.self);
    s = b.fromSnapshot(b.toSnapshot(s), ctx.self);
    return { state: s, d };
  }

  test("a bot marks itself before its first pending delivery and announces when idle", async () => {
    const now = { t: 2_000_000 };
    const rec = { calls: [] as Obj[], timers: [] as Obj[] };
    const ctx = ctxFor(webhookRef(1, 9), now, rec);
    let s: unknown = webhookBehavior.initial(ctx.self);
    let r = await run(s, "enqueue", { messageId: 5, trigger: "mention", message: { id: 5 } }, ctx);
    s = r.state;
    assert.deepEqual(rec.calls, [
      { ref: "webhookIndex.1.~index", method: "mark", args: { botId: 9, gen: 1 } },
    ]);
    // A second delivery while one is pending: no second mark.
    r = await run(s, "enqueue", { messageId: 6, trigger: "mention", message: { id: 6 } }, ctx);
    s = r.state;
    assert.equal(rec.calls.length, 1);
    r = await run(s, "claim", { max: 10, timeoutMs: 1000 }, ctx);
    s = r.state;
    r = await run(s, "report", { messageId: 5, attempt: 1, outcome: "done" }, ctx);
    s = r.state;
    assert.ok(!(r.d.notices ?? []).some((n) => n.subject === "webhook.idle"));
    r = await run(s, "report", { messageId: 6, attempt: 1, outcome: "done" }, ctx);
    s = r.state;
    assert.deepEqual(r.d.notices, [{ subject: "webhook.idle", data: { realmId: 1, botId: 9, gen: 2 } }]);
    // An idle bot's poke says so again (a stale mark gets cleared).
    r = await run(s, "poke", {}, ctx);
    assert.deepEqual(r.d.notices, [{ subject: "webhook.idle", data: { realmId: 1, botId: 9, gen: 2 } }]);
    // The next delivery marks a newer generation.
    r = await run(s, "enqueue", { messageId: 7, trigger: "mention", message: { id: 7 } }, ctx);
    assert.deepEqual(rec.calls[1], {
      ref: "webhookIndex.1.~index",
      method: "mark",
      args: { botId: 9, gen: 3 },
    });
  });

  test("a poke after failover arms the sweep of an attempt still running elsewhere", async () => {
    const now = { t: 3_000_000 };
    const rec = { calls: [] as Obj[], timers: [] as Obj[] };
    const ctx = ctxFor(webhookRef(1, 9), now, rec);
    let s: unknown = webhookBehavior.initial(ctx.self);
    s = (await run(s, "enqueue", { messageId: 5, trigger: "mention", message: { id: 5 } }, ctx)).state;
    s = (await run(s, "claim", { max: 1, timeoutMs: 1000 }, ctx)).state;
    // A new activation (the old node died): its timers are gone; a poke re-arms them.
    rec.timers.length = 0;
    now.t += 2_000;
    const r = await run(s, "poke", {}, ctx);
    assert.deepEqual(r.d.facts ?? [], []);
    assert.deepEqual(rec.timers, [{ key: "sweep:5:1", delayMs: 1000 + 5000 - 2000, method: "poke" }]);
  });

  test("the index: marks and clears by generation, a late clear keeps a newer mark", async () => {
    const rec = { calls: [] as Obj[], timers: [] as Obj[] };
    const ctx = ctxFor(webhookIndexRef(1), { t: 0 }, rec);
    let s: unknown = webhookIndexBehavior.initial(ctx.self);
    s = (await run(s, "mark", { botId: 9, gen: 1 }, ctx)).state;
    s = (await run(s, "mark", { botId: 10, gen: 4 }, ctx)).state;
    let r = await run(s, "mark", { botId: 10, gen: 3 }, ctx);
    assert.deepEqual(r.d.reply, { marked: false });
    r = await run(s, "pendingBots", {}, ctx);
    assert.deepEqual(r.d.reply, {
      bots: [
        { botId: 9, gen: 1 },
        { botId: 10, gen: 4 },
      ],
    });
    // Bot 9 went idle at gen 1, but was marked again at gen 2 before the clear arrived.
    s = (await run(s, "mark", { botId: 9, gen: 2 }, ctx)).state;
    r = await run(s, "clear", { botId: 9, gen: 1 }, ctx);
    assert.deepEqual(r.d.reply, { cleared: false });
    s = r.state;
    r = await run(s, "clear", { botId: 9, gen: 2 }, ctx);
    assert.deepEqual(r.d.reply, { cleared: true });
    s = r.state;
    r = await run(s, "pendingBots", {}, ctx);
    assert.deepEqual(r.d.reply, { bots: [{ botId: 10, gen: 4 }] });
    // Roles do not mix: each kind has its own methods and owns its own keys.
    await assert.rejects(async () => run(s, "enqueue", { messageId: 1, trigger: "mention" }, ctx));
    const bot = webhookBehavior.initial(webhookRef(1, 9));
    await assert.rejects(async () =>
      run(bot, "mark", { botId: 9, gen: 1 }, ctxFor(webhookRef(1, 9), { t: 0 }, rec)),
    );
    assert.equal(webhookIndexBehavior.handlers.enqueue, undefined);
    assert.equal(webhookBehavior.handlers.mark, undefined);
    assert.equal(webhookBehavior.ownsKey?.(webhookIndexRef(1).key), false);
    assert.equal(webhookIndexBehavior.ownsKey?.(webhookRef(1, 9).key), false);
  });
});
