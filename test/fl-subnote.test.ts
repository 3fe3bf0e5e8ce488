// FL 397: Notification Bot's direct message to users someone else
// subscribed to channels (POST /users/me/subscriptions with principals),
// the send_new_subscription_messages opt-out, the reply's
// new_subscription_messages_sent and register's
// max_bulk_new_subscription_messages. Embedded, and the main flow in a
// cluster (real nats-server and redis-server).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import {
  createChannel,
  err,
  newUser,
  NOTIFICATION_BOT,
  ok,
  requireBinaries,
  uniq,
  useChat,
  useCluster,
  type Api,
  type Creds,
  type User,
} from "./support/index.ts";

const BOT_EMAIL = NOTIFICATION_BOT.email;
const BOT_ID = NOTIFICATION_BOT.id;
const mention = (u: { fullName: string; userId: number }) => `@_**${u.fullName}|${u.userId}**`;

/** The user's DMs from Notification Bot, oldest first (raw Markdown). */
async function botDms(api: Api, who: Creds): Promise<Obj[]> {
  const r = await api(
    "GET",
    "/messages",
    {
      anchor: "newest",
      num_before: 100,
      num_after: 0,
      narrow: [{ operator: "dm", operand: [BOT_ID] }],
      apply_markdown: false,
    },
    who,
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.messages as Obj[];
}

describe("FL 397: new-subscription notices (embedded)", () => {
  const chat = useChat();
  const api = chat.api;
  const channel = () => createChannel(chat, [chat.owner], { name: uniq("subnote") });

  test("FL 397: register sends max_bulk_new_subscription_messages", async () => {
    const r = ok(await api("POST", "/register", { fetch_event_types: ["realm"] }));
    assert.equal(r.max_bulk_new_subscription_messages, 100);
  });

  test("FL 397: each newly subscribed human gets one DM naming the actor and the channels", async () => {
    const a = await channel();
    const b = await channel();
    const alice = await chat.newUser();
    const bob = await chat.newUser();
    // Bob already in `a`: his notice names only `b`.
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: [bob.userId],
      }),
    );
    const before = (await botDms(api, bob)).length;

    const r = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }, { name: b.name }],
        principals: [alice.userId, bob.userId, chat.owner.userId],
      }),
    );
    assert.equal(r.new_subscription_messages_sent, true);
    assert.equal(r.created, undefined);
    assert.equal(r.notices, undefined);

    const toAlice = await botDms(api, alice);
    assert.equal(toAlice.length, 1);
    const m = toAlice[0]!;
    assert.equal(m.sender_email, BOT_EMAIL);
    assert.equal(m.type, "private");
    const [x, y] = [a.name, b.name].sort();
    assert.equal(
      m.content,
      `${mention(chat.owner)} subscribed you to these channels:\n\n* #**${x}**\n* #**${y}**`,
    );
    assert.deepEqual(m.flags, []);

    const toBob = await botDms(api, bob);
    assert.equal(toBob.length, before + 1);
    assert.equal(
      toBob.at(-1)!.content,
      `${mention(chat.owner)} subscribed you to the channel #**${b.name}**.`,
    );
    // The actor gets none.
    assert.equal((await botDms(api, chat.owner)).length, 0);
    // Rendered: a silent mention and channel links.
    const html = await api("GET", `/messages/${m.id as number}`, {}, alice);
    assert.match(String((html.body.message as Obj).content), /class="user-mention silent"/);
    assert.match(String((html.body.message as Obj).content), new RegExp(`data-stream-id="${a.id}"`));
  });

  test("FL 397: no DM for bots, for oneself, for already-subscribed users or for channels the request created", async () => {
    const a = await channel();
    const bot = ok(await api("POST", "/bots", { full_name: "Subnote Bot", short_name: "subnotebot" }));
    const botId = bot.user_id as number;
    const carol = await chat.newUser();
    // Carol subscribes herself.
    ok(await api("POST", "/users/me/subscriptions", { subscriptions: [{ name: a.name }] }, carol));
    assert.equal((await botDms(api, carol)).length, 0);
    // Already subscribed: nothing new.
    const again = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: [carol.userId],
      }),
    );
    assert.equal(again.new_subscription_messages_sent, true);
    assert.equal((await botDms(api, carol)).length, 0);
    // A channel created by the request: no notice (Zulip announces it otherwise).
    const dave = await chat.newUser();
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: uniq("subnote-new") }],
        principals: [dave.userId, botId],
      }),
    );
    assert.equal((await botDms(api, dave)).length, 0);
    // The bot subscribed to an existing channel: no DM is sent to it (its chat.owner reads nothing from the bot).
    ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: [botId],
      }),
    );
    assert.equal((await botDms(api, chat.owner)).length, 0);
  });

  test("FL 397: send_new_subscription_messages false sends nothing and the reply has no flag", async () => {
    const a = await channel();
    const erin = await chat.newUser();
    const r = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: [erin.userId],
        send_new_subscription_messages: false,
      }),
    );
    assert.deepEqual(r.subscribed, { [String(erin.userId)]: [a.name] });
    assert.equal("new_subscription_messages_sent" in r, false);
    assert.equal((await botDms(api, erin)).length, 0);
  });

  test("FL 397: bad send_new_subscription_messages is a 400 that subscribes nobody", async () => {
    const a = await channel();
    const fay = await chat.newUser();
    err(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: [fay.userId],
        send_new_subscription_messages: 1,
      }),
      "send_new_subscription_messages is not a boolean",
    );
    const subs = ok(await api("GET", "/users/me/subscriptions", {}, fay)).subscriptions as Obj[];
    assert.equal(
      subs.some((s) => s.name === a.name),
      false,
    );
  });

  test("FL 397: more than 100 newly subscribed users: no DMs, reply says false", async () => {
    const a = await channel();
    const users: User[] = [];
    for (let i = 0; i < 101; i++) users.push(await chat.newUser());
    const r = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: a.name }],
        principals: users.map((u) => u.userId),
      }),
    );
    assert.equal(Object.keys(r.subscribed as Obj).length, 101);
    assert.equal(r.new_subscription_messages_sent, false);
    assert.equal((await botDms(api, users[0]!)).length, 0);
    assert.equal((await botDms(api, users[100]!)).length, 0);
    // Exactly 100 is still within the limit.
    const b = await channel();
    const r2 = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: b.name }],
        principals: users.slice(0, 100).map((u) => u.userId),
      }),
    );
    assert.equal(r2.new_subscription_messages_sent, true);
    assert.equal((await botDms(api, users[99]!)).length, 1);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("FL 397: new-subscription notices (cluster)", { skip }, () => {
  const c = useCluster();

  test("FL 397: a subscribed user gets Notification Bot's DM through the gateway", async () => {
    const user = await newUser(c, "member", "Cluster Sub");
    const me = await c.api("GET", "/users/me");
    const { name } = await createChannel(c, [me.body.user_id], { name: "subnote cluster" });
    const r = await c.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [user.userId],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.new_subscription_messages_sent, true);
    const dms = await botDms(c.api, user);
    assert.equal(dms.length, 1);
    assert.equal(
      dms[0]!.content,
      `${mention({ fullName: String(me.body.full_name), userId: Number(me.body.user_id) })} subscribed you to the channel #**${name}**.`,
    );
  });
});
