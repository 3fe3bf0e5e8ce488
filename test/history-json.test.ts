// GET /messages bound to a channel writes its page from message texts kept
// between reads (actors/channel/message-json.ts). Each test reads first, so
// the texts are kept, then changes what they show and reads again: an edit,
// a reaction, a topic move, the sender's new name, the channel's new name,
// other client options, another reader's flags. The channel holds more
// messages than the conversation's recent window (50), so both kinds of
// kept message are changed: the window's (changed in place) and the body
// cache's (replaced). Every message of a page must equal GET
// /messages/{id}'s, which builds its answer afresh.

import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import { createChannel, ok, uniq, useChat, type User } from "./support/index.ts";

const chat = useChat();
const api = chat.api;
const COUNT = 70;

let channelId = 0;
let ids: number[] = [];
let reader: User;

async function page(params: Obj = {}, auth: User = chat.owner): Promise<Obj[]> {
  const r = ok(
    await api(
      "GET",
      "/messages",
      {
        anchor: "newest",
        num_before: 100,
        num_after: 0,
        narrow: [{ operator: "channel", operand: channelId }],
        client_gravatar: false,
        ...params,
      },
      auth,
    ),
  );
  return r.messages as Obj[];
}

/** The page's messages of `which`, each as GET /messages/{id} gives it. */
async function assertFresh(which: number[], params: Obj = {}, auth: User = chat.owner): Promise<Obj[]> {
  const msgs = await page(params, auth);
  const byId = new Map(msgs.map((m) => [m.id as number, m]));
  for (const id of which) {
    const one = ok(
      await api("GET", `/messages/${id}`, { apply_markdown: params.apply_markdown ?? true }, auth),
    );
    assert.deepEqual(byId.get(id), one.message, `message ${id}`);
  }
  return which.map((id) => byId.get(id)!);
}

before(async () => {
  reader = await chat.newUser();
  channelId = (await createChannel(chat, [chat.owner.userId, reader.userId], { name: uniq("hj") })).id;
  ids = [];
  for (let i = 0; i < COUNT; i++) {
    const r = ok(
      await api("POST", "/messages", { type: "stream", to: channelId, topic: "t", content: `m **${i}**` }),
    );
    ids.push(r.id as number);
  }
});

/** An old message (the body cache) and the newest (the recent window). */
const both = () => [ids[5]!, ids[COUNT - 1]!];

test("an edit shows in the next read, old and recent messages alike", async () => {
  await assertFresh(both());
  for (const id of both()) ok(await api("PATCH", `/messages/${id}`, { content: `edited *${id}*` }));
  const [oldMsg, newMsg] = await assertFresh(both());
  assert.match(oldMsg!.content as string, /<em>\d+<\/em>/);
  assert.ok(newMsg!.last_edit_timestamp);
  const raw = await assertFresh(both(), { apply_markdown: false });
  assert.equal(raw[0]!.content, `edited *${ids[5]}*`);
  assert.equal(raw[0]!.content_type, "text/x-markdown");
});

test("a reaction shows in the next read, and its removal", async () => {
  await assertFresh(both());
  for (const id of both()) ok(await api("POST", `/messages/${id}/reactions`, { emoji_name: "smile" }));
  for (const m of await assertFresh(both())) assert.equal((m.reactions as Obj[]).length, 1);
  for (const id of both()) ok(await api("DELETE", `/messages/${id}/reactions`, { emoji_name: "smile" }));
  for (const m of await assertFresh(both())) assert.deepEqual(m.reactions, []);
});

test("a topic move shows in the next read", async () => {
  await assertFresh(both());
  for (const id of both())
    ok(await api("PATCH", `/messages/${id}`, { topic: "moved here", propagate_mode: "change_one" }));
  for (const m of await assertFresh(both())) assert.equal(m.subject, "moved here");
});

test("the sender's new name and the channel's new name show in the next read", async () => {
  await assertFresh(both());
  ok(await api("PATCH", "/settings", { full_name: "Olivia Renamed" }));
  const name = uniq("renamed");
  ok(await api("PATCH", `/streams/${channelId}`, { new_name: name }));
  for (const m of await assertFresh(both())) {
    assert.equal(m.sender_full_name, "Olivia Renamed");
    assert.equal(m.display_recipient, name);
  }
  ok(await api("PATCH", "/settings", { full_name: chat.owner.fullName }));
});

test("reads with other client options get their own form", async () => {
  const html = await page();
  const md = await page({ apply_markdown: false });
  const gravatar = await page({ client_gravatar: true });
  const again = await page();
  assert.deepEqual(again, html);
  // An untouched message.
  const id = ids[COUNT - 3]!;
  const of = (ms: Obj[]) => ms.find((m) => m.id === id)!;
  assert.equal(of(html).content_type, "text/html");
  assert.equal(of(html).content, `<p>m <strong>${COUNT - 3}</strong></p>`);
  assert.equal(of(md).content_type, "text/x-markdown");
  assert.equal(of(md).content, `m **${COUNT - 3}**`);
  assert.deepEqual({ ...of(gravatar), avatar_url: null }, { ...of(html), avatar_url: null });
});

test("each reader gets their own flags on the same kept messages", async () => {
  const id = ids[COUNT - 2]!;
  ok(await api("POST", "/messages/flags", { messages: JSON.stringify([id]), op: "add", flag: "starred" }));
  await assertFresh([id]);
  const mine = (await page()).find((m) => m.id === id)!;
  const theirs = (await assertFresh([id], {}, reader))[0]!;
  assert.ok((mine.flags as string[]).includes("starred"));
  assert.ok(!(theirs.flags as string[]).includes("starred"));
  assert.deepEqual({ ...theirs, flags: mine.flags }, mine);
});

test("a search read marks its matches on kept messages without keeping the marks", async () => {
  await page();
  const narrow = [
    { operator: "channel", operand: channelId },
    { operator: "search", operand: "edited" },
  ];
  const found = await page({ narrow });
  assert.ok(found.length >= 1);
  assert.ok(found.every((m) => typeof m.match_content === "string"));
  const plain = await page();
  assert.ok(plain.every((m) => !("match_content" in m)));
});
