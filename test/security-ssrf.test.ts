// Outgoing webhooks must not become a way into the server's own network
// (SSRF): any member can create a bot with any payload URL, and the answer
// comes back to them as a message. Black-box: a member's bot aimed at a
// local HTTP server in several spellings of loopback, with the default
// settings, with OUTGOING_WEBHOOK_ALLOWED_NETWORKS, and through an egress
// proxy (OUTGOING_HTTP_PROXY); plus the connect-time check itself with a
// lookup that answers a private address (what DNS rebinding relies on).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server, type ServerResponse } from "node:http";
import { connect as netConnect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { startEmbedded } from "../server.ts";
import { assertSuccess, useChat, useEnv, type Chat, type User } from "./support/index.ts";
import { until } from "./support/ops.ts";

type Responder = (res: ServerResponse) => void;

/** A bot server on the dual-stack wildcard, so 127.0.0.1, ::1 and ::ffff:127.0.0.1 all reach it. */
class BotServer {
  server!: Server;
  port = 0;
  readonly got: { path: string; host: string }[] = [];
  private readonly plans = new Map<string, Responder>();

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const path = req.url ?? "";
        this.got.push({ path, host: req.headers.host ?? "" });
        const plan = this.plans.get(path);
        if (plan) plan(res);
        else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ content: `pong from ${path}` }));
        }
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "::", r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  plan(path: string, r: Responder): void {
    this.plans.set(path, r);
  }

  on(path: string): number {
    return this.got.filter((g) => g.path === path).length;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/** A forward proxy that tunnels CONNECT to the requested host, except the hosts it is told to refuse (407, as Smokescreen does). */
class TinyProxy {
  server!: Server;
  port = 0;
  readonly tunnels: string[] = [];
  readonly forwarded: string[] = [];
  readonly refused: string[] = [];

  async start(refuse: (host: string) => boolean): Promise<void> {
    this.server = createServer((req, res) => {
      // Plain forwarding of absolute-URI requests, in case a client does not tunnel.
      const url = new URL(req.url ?? "");
      this.forwarded.push(url.host);
      const up = httpRequest(url, { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    this.server.on("connect", (req, socket, head) => {
      const target = req.url ?? "";
      const i = target.lastIndexOf(":");
      const host = target.slice(0, i).replace(/^\[|\]$/g, "");
      if (refuse(host)) {
        this.refused.push(target);
        socket.end("HTTP/1.1 407 Request Rejected by Proxy\r\ncontent-length: 0\r\n\r\n");
        return;
      }
      this.tunnels.push(target);
      const up = netConnect(Number(target.slice(i + 1)), host, () => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        up.write(head);
        up.pipe(socket);
        socket.pipe(up);
      });
      up.on("error", () => socket.destroy());
      socket.on("error", () => up.destroy());
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

let seq = 0;

interface Bot {
  id: number;
  owner: User;
}

/** A member creates an outgoing-webhook bot aimed at `url`. */
async function memberBot(chat: Chat, member: User, url: string): Promise<Bot> {
  const n = ++seq;
  const r = await chat.api(
    "POST",
    "/bots",
    { full_name: `Probe Bot${n}`, short_name: `probe${n}`, bot_type: 3, payload_url: JSON.stringify(url) },
    member,
  );
  assertSuccess(r);
  return { id: r.body.user_id as number, owner: member };
}

/** Messages the bot sent, in order (from the node's message events). */
function botMessages(chat: Chat, botId: number): Obj[] {
  const seen = new Set<number>();
  const out: Obj[] = [];
  for (const e of chat.events) {
    if (e.event.type !== "message") continue;
    const m = e.event.message as Obj;
    if (m.sender_id !== botId || seen.has(Number(m.id))) continue;
    seen.add(Number(m.id));
    out.push(m);
  }
  return out;
}

/** The owner DMs the bot and waits for `n` messages from it. */
async function trigger(chat: Chat, bot: Bot, n: number, content = "ping"): Promise<Obj[]> {
  const r = await chat.api(
    "POST",
    "/messages",
    { type: "direct", to: JSON.stringify([bot.id]), content },
    bot.owner,
  );
  assertSuccess(r);
  return until(
    `${n} message(s) from bot ${bot.id}`,
    async () => {
      const ms = botMessages(chat, bot.id);
      return ms.length >= n ? ms : null;
    },
    15_000,
  );
}

const DISALLOWED = "The URL configured for the webhook is for a private or disallowed network.";

const rx = new BotServer();

before(async () => {
  await rx.start();
});

after(async () => {
  await rx.stop();
});

describe("outgoing webhooks - internal destinations refused by default", () => {
  const chat = useChat();
  let member: User;
  before(async () => {
    member = await chat.newUser(400);
  });

  const spellings: [string, (port: number, path: string) => string][] = [
    ["dotted quad", (p, path) => `http://127.0.0.1:${p}${path}`],
    ["decimal integer", (p, path) => `http://2130706433:${p}${path}`],
    ["hex and short form", (p, path) => `http://0x7f.1:${p}${path}`],
    ["octal", (p, path) => `http://0177.0.0.1:${p}${path}`],
    ["IPv6 loopback", (p, path) => `http://[::1]:${p}${path}`],
    ["IPv4-mapped IPv6", (p, path) => `http://[::ffff:127.0.0.1]:${p}${path}`],
    ["unspecified address", (p, path) => `http://0.0.0.0:${p}${path}`],
    ["a name that resolves to loopback", (p, path) => `http://localhost:${p}${path}`],
  ];
  for (const [name, url] of spellings) {
    test(`${name}: no request reaches the server, the owner is told`, async () => {
      const path = `/default-${++seq}`;
      const bot = await memberBot(chat, member, url(rx.port, path));
      const [fail, notice] = await trigger(chat, bot, 2);
      assert.equal(rx.on(path), 0, "the bot server got a request");
      assert.equal(fail!.content, "Failure! Third party responded with 407");
      assert.match(String(notice!.content), /triggered an outgoing webhook\.\n/);
      assert.ok(String(notice!.content).includes(DISALLOWED), String(notice!.content));
      // The notice went to the bot's owner: the member.
      const to = (notice!.display_recipient as Obj[]).map((u) => Number(u.id)).sort((a, b) => a - b);
      assert.deepEqual(
        to,
        [bot.id, member.userId].sort((a, b) => a - b),
      );
    });
  }
});

describe("outgoing webhooks - OUTGOING_WEBHOOK_ALLOWED_NETWORKS", () => {
  // Read when the server (and its webhook worker) starts.
  useEnv({ OUTGOING_WEBHOOK_ALLOWED_NETWORKS: "127.0.0.0/8" });
  const chat = useChat();
  let member: User;
  before(async () => {
    member = await chat.newUser(400);
  });

  for (const [name, host] of [
    ["dotted quad", "127.0.0.1"],
    ["decimal integer", "2130706433"],
    ["IPv4-mapped IPv6", "[::ffff:127.0.0.1]"],
  ] as const) {
    test(`an allowed network is reached (${name})`, async () => {
      const path = `/allowed-${++seq}`;
      const bot = await memberBot(chat, member, `http://${host}:${rx.port}${path}`);
      const [reply] = await trigger(chat, bot, 1);
      assert.equal(rx.on(path), 1);
      assert.equal(reply!.content, `pong from ${path}`);
    });
  }

  test("an address outside the allowed networks stays refused (::1 is not in 127.0.0.0/8)", async () => {
    const path = `/allowed-${++seq}`;
    const bot = await memberBot(chat, member, `http://[::1]:${rx.port}${path}`);
    const [fail, notice] = await trigger(chat, bot, 2);
    assert.equal(rx.on(path), 0);
    assert.equal(fail!.content, "Failure! Third party responded with 407");
    assert.ok(String(notice!.content).includes(DISALLOWED));
  });

  test("the owner's notice quotes a bounded excerpt of a 1 MB error body", async () => {
    const path = `/allowed-${++seq}`;
    // Multi-byte characters, so a cut in the middle of one would show.
    const body = "é".repeat(500_000);
    rx.plan(path, (res) => {
      res.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
      res.end(body);
    });
    const bot = await memberBot(chat, member, `http://127.0.0.1:${rx.port}${path}`);
    const [fail, notice] = await trigger(chat, bot, 2);
    assert.equal(fail!.content, "Failure! Third party responded with 400");
    const text = String(notice!.content);
    assert.ok(text.length < 5000, `notice of ${text.length} characters`);
    assert.match(text, /status code \*400\*/);
    // Zulip quotes the payload as Python bytes: é is b'\xc3\xa9'; exactly 500 of them, none cut.
    const quoted = /b'((?:\\xc3\\xa9)+)'/.exec(text);
    assert.ok(quoted, text.slice(0, 300));
    assert.equal(quoted[1]!.length / "\\xc3\\xa9".length, 500);
    assert.match(text, /Only its first 500 characters are shown/);
  });

  test("the owner's notice quotes a bounded excerpt of a 1 MB invalid reply", async () => {
    const path = `/allowed-${++seq}`;
    rx.plan(path, (res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("<".repeat(1_000_000));
    });
    const bot = await memberBot(chat, member, `http://127.0.0.1:${rx.port}${path}`);
    const [fail, notice] = await trigger(chat, bot, 2);
    assert.equal(fail!.content, "Failure! Invalid JSON in response");
    const text = String(notice!.content);
    assert.ok(text.length < 2000, `notice of ${text.length} characters`);
    assert.ok(text.includes(`'${"<".repeat(500)}'`), text.slice(0, 300));
  });
});

describe("outgoing webhooks - OUTGOING_HTTP_PROXY", () => {
  const proxy = new TinyProxy();
  before(async () => {
    await proxy.start((host) => host.endsWith(".refused.test"));
  });
  after(async () => {
    await proxy.stop();
  });
  useEnv(() => ({ OUTGOING_HTTP_PROXY: `http://127.0.0.1:${proxy.port}` }));
  const chat = useChat();
  let member: User;
  before(async () => {
    member = await chat.newUser(400);
  });

  test("requests go through the proxy, which decides the destination", async () => {
    const path = `/proxied-${++seq}`;
    const bot = await memberBot(chat, member, `http://127.0.0.1:${rx.port}${path}`);
    const [reply] = await trigger(chat, bot, 1);
    assert.equal(reply!.content, `pong from ${path}`);
    assert.equal(rx.on(path), 1);
    assert.deepEqual(proxy.tunnels, [`127.0.0.1:${rx.port}`]);
    assert.deepEqual(proxy.forwarded, []);
  });

  test("a destination the proxy refuses (407) is reported as a disallowed network", async () => {
    const bot = await memberBot(chat, member, "http://metadata.refused.test/latest");
    const [fail, notice] = await trigger(chat, bot, 2);
    assert.deepEqual(proxy.refused, ["metadata.refused.test:80"]);
    assert.equal(fail!.content, "Failure! Third party responded with 407");
    assert.ok(String(notice!.content).includes(DISALLOWED));
  });
});

describe("outgoing webhooks - configuration errors stop the start", () => {
  for (const [name, value, pattern] of [
    [
      "OUTGOING_WEBHOOK_ALLOWED_NETWORKS",
      "127.0.0.0/33",
      /OUTGOING_WEBHOOK_ALLOWED_NETWORKS: '127\.0\.0\.0\/33'/,
    ],
    [
      "OUTGOING_WEBHOOK_ALLOWED_NETWORKS",
      "10.0.0.0/8,localhost",
      /OUTGOING_WEBHOOK_ALLOWED_NETWORKS: 'localhost'/,
    ],
    ["OUTGOING_HTTP_PROXY", "not a url", /OUTGOING_HTTP_PROXY: 'not a url'/],
  ] as const) {
    test(`${name}=${value}`, async () => {
      const saved = process.env[name];
      process.env[name] = value;
      const dir = mkdtempSync(join(tmpdir(), "zulip-ssrf-"));
      try {
        const started = startEmbedded({
          port: 0,
          host: "127.0.0.1",
          dataDir: dir,
          shards: 4,
          bootstrap: {
            ownerEmail: "owner@example.com",
            ownerPassword: "owner-password-1",
            ownerName: "Olivia Owner",
            realmName: "Test Org",
            externalHost: "localhost",
          },
        });
        await assert.rejects(
          started.then(async (s) => {
            await s.close();
            return s;
          }),
          pattern,
        );
      } finally {
        if (saved === undefined) delete process.env[name];
        else process.env[name] = saved;
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe("the connect-time check", () => {
  test("every resolved address is checked, and the socket goes to the checked one", async () => {
    const { AddressPolicy, guardedConnector } = await import("../webhook/egress.ts");
    const { Agent, request } = await import("undici");
    const path = `/rebind-${++seq}`;
    // A name whose resolver answers loopback, as a rebinding name does
    // once it has passed a check made earlier than the connect.
    let lookups = 0;
    const lookup = async (host: string) => {
      lookups++;
      assert.equal(host, "rebind.test");
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const refused = new Agent({ connect: guardedConnector(AddressPolicy.fromNetworks([]), lookup) });
    try {
      await assert.rejects(
        request(`http://rebind.test:${rx.port}${path}`, { method: "POST", body: "{}", dispatcher: refused }),
        (err: Error & { code?: string }) => err.code === "ERR_DISALLOWED_DESTINATION",
      );
      assert.equal(rx.on(path), 0);
      assert.equal(lookups, 1);
    } finally {
      await refused.close();
    }

    // Allowed: resolved once, connected to that very address, the URL's host kept in Host.
    const allowed = new Agent({
      connect: guardedConnector(AddressPolicy.fromNetworks(["127.0.0.0/8"]), lookup),
    });
    try {
      const res = await request(`http://rebind.test:${rx.port}${path}`, {
        method: "POST",
        body: "{}",
        dispatcher: allowed,
      });
      await res.body.text();
      assert.equal(res.statusCode, 200);
      assert.equal(lookups, 2);
      assert.deepEqual(
        rx.got.filter((g) => g.path === path).map((g) => g.host),
        [`rebind.test:${rx.port}`],
      );
    } finally {
      await allowed.close();
    }

    // A name with a public and a private address is refused whole.
    const mixed = new Agent({
      connect: guardedConnector(AddressPolicy.fromNetworks([]), async () => [
        { address: "93.184.215.14", family: 4 },
        { address: "10.0.0.7", family: 4 },
      ]),
    });
    try {
      await assert.rejects(
        request("http://mixed.test/", { dispatcher: mixed }),
        (err: Error & { code?: string }) => err.code === "ERR_DISALLOWED_DESTINATION",
      );
    } finally {
      await mixed.close();
    }
  });

  test("the address policy in every spelling", async () => {
    const { AddressPolicy } = await import("../webhook/egress.ts");
    const policy = AddressPolicy.fromNetworks([]);
    const refused = [
      "127.0.0.1",
      "127.255.255.254",
      "0.0.0.0",
      "10.1.2.3",
      "100.64.0.1",
      "169.254.169.254",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "224.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "::127.0.0.1",
      "64:ff9b::7f00:1",
      "64:ff9b::10.0.0.1",
      "2002:7f00:1::1",
      "2002:c0a8:101::",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "fe80::1%eth0",
      "ff02::1",
      "not-an-address",
    ];
    const allowed = [
      "8.8.8.8",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700:4700::1111",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ];
    for (const a of refused) assert.equal(policy.allows(a), false, a);
    for (const a of allowed) assert.equal(policy.allows(a), true, a);
    const lan = AddressPolicy.fromNetworks(["127.0.0.0/8", "fd00::/8", "192.168.7.7"]);
    for (const a of ["127.0.0.1", "::ffff:127.0.0.1", "fd00::5", "192.168.7.7"])
      assert.equal(lan.allows(a), true, a);
    for (const a of ["::1", "192.168.7.8", "10.0.0.1"]) assert.equal(lan.allows(a), false, a);
    for (const bad of ["127.0.0.1/33", "::/129", "localhost", "10.0.0.0/", "10.0.0.0/8/8", "10.0.0.0/-1"]) {
      assert.throws(() => AddressPolicy.fromNetworks([bad]), /OUTGOING_WEBHOOK_ALLOWED_NETWORKS/, bad);
    }
  });
});
