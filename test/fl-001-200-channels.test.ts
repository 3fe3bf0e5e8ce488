// Feature levels 134 and 192: users who newly gain sight of an existing
// channel get its `stream` create event (and, when a private channel turns
// public, its subscribers as `peer_add`).
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { drain, ok, openQueue, uniq, useChat, type Queue, type User } from "./support/index.ts";

const chat = useChat();
let member: User;
let other: User;
let guest: User;
let admin: User;

before(async () => {
  member = await chat.newUser(400);
  other = await chat.newUser(400);
  guest = await chat.newUser(600);
  admin = await chat.newUser(200);
});

async function channel(name: string, inviteOnly: boolean, principals: number[]): Promise<number> {
  ok(
    await chat.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      invite_only: inviteOnly,
      principals,
    }),
  );
  return ok(await chat.api("GET", "/get_stream_id", { stream: name })).stream_id as number;
}

const summary = (
  evs: { type: string; op?: string; streams?: { stream_id: number }[]; stream_id?: number }[],
) => evs.map((e) => [e.type, e.op, e.streams?.[0]?.stream_id ?? e.stream_id ?? null]);

async function queues(...users: User[]): Promise<Queue[]> {
  return Promise.all(users.map((u) => openQueue(chat, u, ["stream", "subscription"])));
}

describe("feature level 192: subscribing makes a channel visible", () => {
  test("a guest subscribed to a public channel gets its create event before the subscription", async () => {
    const id = await channel(uniq("pub"), false, [chat.owner.userId]);
    const [qg, qm] = await queues(guest, member);
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: await name(id) }],
        principals: [guest.userId],
      }),
    );
    const evs = await drain(chat, qg);
    assert.deepEqual(summary(evs).slice(0, 2), [
      ["stream", "create", id],
      ["subscription", "add", null],
    ]);
    assert.equal(evs[0].streams[0].invite_only, false);
    // A member could already see it: only the peer_add.
    assert.deepEqual(summary(await drain(chat, qm)), [["subscription", "peer_add", null]]);
  });

  test("a member subscribed to a private channel gets its create event; an administrator does not", async () => {
    const id = await channel(uniq("priv"), true, [chat.owner.userId]);
    const [qm, qa] = await queues(member, admin);
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: await name(id) }],
        principals: [member.userId, admin.userId],
      }),
    );
    const mine = summary(await drain(chat, qm));
    assert.deepEqual(
      mine.filter((e) => e[0] === "stream"),
      [["stream", "create", id]],
    );
    assert.deepEqual(mine[0], ["stream", "create", id]);
    assert.deepEqual(
      summary(await drain(chat, qa)).filter((e) => e[0] === "stream"),
      [],
    );
  });
});

describe("feature level 134: a private channel made public", () => {
  test("users who could not see it get create and peer_add before the update; others only the update", async () => {
    const id = await channel(uniq("secret"), true, [chat.owner.userId, member.userId]);
    const [qo, qm, qa, qg] = await queues(other, member, admin, guest);
    ok(await chat.api("PATCH", `/streams/${id}`, { is_private: false }));

    const evs = await drain(chat, qo);
    assert.deepEqual(summary(evs), [
      ["stream", "create", id],
      ["subscription", "peer_add", null],
      ["stream", "update", id],
    ]);
    assert.equal(evs[0].streams[0].invite_only, false);
    assert.deepEqual(evs[1].stream_ids, [id]);
    assert.deepEqual(
      evs[1].user_ids,
      [chat.owner.userId, member.userId].sort((a, b) => a - b),
    );
    // A subscriber and an administrator already saw it and its subscribers.
    assert.deepEqual(summary(await drain(chat, qm)), [["stream", "update", id]]);
    assert.deepEqual(summary(await drain(chat, qa)), [["stream", "update", id]]);
    // A guest still cannot see a public channel it is not subscribed to.
    assert.deepEqual(summary(await drain(chat, qg)), []);
  });
});

async function name(id: number): Promise<string> {
  return (ok(await chat.api("GET", `/streams/${id}`, {})).stream as { name: string }).name;
}

describe("feature level 145: members may unsubscribe their own bots", () => {
  test("a member removes a bot it owns; not another's bot, nor its bot together with a user", async () => {
    const mApi = (m: string, p: string, params: Record<string, unknown>) => chat.api(m, p, params, member);
    const mine = ok(
      await mApi("POST", "/bots", {
        full_name: `Mine ${uniq("b")}`,
        short_name: uniq("mine").replace(" ", ""),
      }),
    ).user_id as number;
    const theirs = ok(
      await chat.api("POST", "/bots", {
        full_name: `Theirs ${uniq("b")}`,
        short_name: uniq("theirs").replace(" ", ""),
      }),
    ).user_id as number;
    const id = await channel(uniq("bots"), false, [
      chat.owner.userId,
      member.userId,
      mine,
      theirs,
      other.userId,
    ]);
    const n = await name(id);

    const denied = await mApi("DELETE", "/users/me/subscriptions", {
      subscriptions: [n],
      principals: [theirs],
    });
    assert.equal(denied.status, 400);
    assert.equal(denied.body.msg, "Insufficient permission");
    const mixed = await mApi("DELETE", "/users/me/subscriptions", {
      subscriptions: [n],
      principals: [mine, other.userId],
    });
    assert.equal(mixed.body.msg, "Insufficient permission");

    const done = ok(
      await mApi("DELETE", "/users/me/subscriptions", { subscriptions: [n], principals: [mine] }),
    );
    assert.deepEqual(done.removed, [n]);
    const subs = ok(await chat.api("GET", `/streams/${id}/members`, {})).subscribers as number[];
    assert.ok(
      !subs.includes(mine) && subs.includes(theirs) && subs.includes(other.userId),
      JSON.stringify(subs),
    );
  });
});
