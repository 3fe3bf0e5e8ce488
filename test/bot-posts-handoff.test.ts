// The Notification Bot's posts that follow channel creation and new
// subscriptions are a hand-off of the channel directory's turn
// (actors/channel-directory/bot-posts.ts): a node gives a hand-off again
// after a crash, or while it is not acknowledged, so a repeated hand-off
// must post nothing twice. Here the node's handler runs every BOT_POSTS
// hand-off twice, and once more after the reply.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runBotPosts } from "../actors/channel/index.ts";
import { BOT_POSTS } from "../actors/channel-directory/index.ts";
import { typedCallAs } from "../actors/protocol.ts";
import type { Obj } from "../actors/types.ts";
import { createChannel, NOTIFICATION_BOT, ok, uniq, useChat, type User } from "./support/index.ts";

const chat = useChat();
const api = chat.api;

/** A channel topic's messages, or the user's DMs from the bot (raw Markdown), oldest first. */
async function messages(narrow: Obj[], who: User = chat.owner): Promise<Obj[]> {
  const r = ok(
    await api(
      "GET",
      "/messages",
      { anchor: "newest", num_before: 100, num_after: 0, narrow, apply_markdown: false },
      who,
    ),
  );
  return r.messages as Obj[];
}

describe("Notification Bot posts as a hand-off", () => {
  test("a hand-off given again posts its announcement and notices once", async () => {
    const node = chat.srv.node;
    const callAs = typedCallAs(node.callAs.bind(node));
    const given: Obj[][] = [];
    const refused: string[] = [];
    // Every BOT_POSTS hand-off runs twice, as after a crash between the
    // posts and the acknowledgement.
    node.onHandoff(BOT_POSTS, async (data) => {
      given.push(data);
      const first = await runBotPosts(data, callAs, (key) => refused.push(key));
      const second = await runBotPosts(data, callAs, (key) => refused.push(key));
      return first && second;
    });

    const ann = await createChannel(chat, [chat.owner.userId], { name: uniq("ann") });
    ok(await api("PATCH", "/realm", { new_stream_announcements_stream_id: ann.id }));
    const existing = await createChannel(chat, [chat.owner.userId], { name: uniq("old") });
    const alice = await chat.newUser();
    const created = uniq("new");
    const r = ok(
      await api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: existing.name }, { name: created }],
        principals: [alice.userId, chat.owner.userId],
        announce: true,
      }),
    );
    assert.equal(r.new_subscription_messages_sent, true);
    const order = given.at(-1)!;
    assert.equal(order.length, 1);
    // Once more, after the reply: still nothing new.
    assert.equal(await runBotPosts(order, callAs, (key) => refused.push(key)), true);
    assert.deepEqual(refused, []);

    const announced = await messages([
      { operator: "channel", operand: ann.id },
      { operator: "topic", operand: "new channels" },
    ]);
    const mention = `@_**${chat.owner.fullName}|${chat.owner.userId}**`;
    assert.deepEqual(
      announced.map((m) => m.content),
      [`${mention} created a new channel #**${created}**.`],
    );
    const dms = await messages([{ operator: "dm", operand: [NOTIFICATION_BOT.id] }], alice);
    assert.deepEqual(
      dms.map((m) => m.content),
      [`${mention} subscribed you to the channel #**${existing.name}**.`],
    );
    ok(await api("PATCH", "/realm", { new_stream_announcements_stream_id: -1 }));
  });
});
