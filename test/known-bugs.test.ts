// Regressions of bugs real Zulip clients hit, black-box over HTTP: one
// describe per bug.

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  basicAuth,
  eventsUntil,
  newUser,
  openQueue,
  useEmbedded,
} from "./support/index.ts";

describe("bots and dummy addresses when EXTERNAL_HOST has a port", () => {
  const srv = useEmbedded({ env: { EXTERNAL_HOST: "chat.example.com:9991" } });

  test("POST /bots names the bot at the host without its port", async () => {
    const res = await srv.api("POST", "/bots", { full_name: "Port Bot", short_name: "port" });
    assertSuccess(res);
    const u = (await srv.api("GET", `/users/${res.body.user_id}`)).body.user;
    assert.equal(u.email, "port-bot@chat.example.com");
  });

  test("a hidden address becomes a dummy one at the same domain", async () => {
    const m = await newUser(srv);
    assertSuccess(await srv.api("PATCH", "/settings", { email_address_visibility: 4 }, m));
    const u = (await srv.api("GET", `/users/${m.userId}`)).body.user;
    assert.equal(u.email, `user${m.userId}@chat.example.com`);
  });
});

describe("custom emoji without a useful content type, and JPEG emoji", () => {
  const srv = useEmbedded();
  let n = 0;

  /** A minimal valid baseline JPEG: 1x1 greyscale, one quantization table, one-code Huffman tables. */
  function jpeg(): Buffer {
    const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");
    return Buffer.concat([
      hex("ffd8"), // SOI
      hex("ffdb 0043 00"),
      Buffer.alloc(64, 1), // DQT: table 0, all ones
      hex("ffc0 000b 08 0001 0001 01 01 11 00"), // SOF0: 8-bit, 1x1, one component
      hex("ffc4 0014 00 01"),
      Buffer.alloc(15),
      hex("00"), // DHT DC 0: one 1-bit code for category 0
      hex("ffc4 0014 10 01"),
      Buffer.alloc(15),
      hex("00"), // DHT AC 0: one 1-bit code for end-of-block
      hex("ffda 0008 01 01 00 00 3f 00"), // SOS
      hex("3f"), // DC 0, EOB, padding ones
      hex("ffd9"), // EOI
    ]);
  }

  const PNG_1X1 = Buffer.from(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
      "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f6f13b0000000049454e44ae426082",
    "hex",
  );
  const GIF_1X1 = Buffer.from("474946383961010001008000000000ffffff2c00000000010001000002024401003b", "hex");

  /** A multipart upload written by hand, so that a part may carry no Content-Type at all. */
  async function rawUpload(name: string, data: Buffer, filename: string, type: string | null) {
    const boundary = "----kb" + ++n;
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="f1"; filename="${filename}"\r\n` +
      (type === null ? "" : `Content-Type: ${type}\r\n`) +
      "\r\n";
    const body = Buffer.concat([Buffer.from(head), data, Buffer.from(`\r\n--${boundary}--\r\n`)]);
    const res = await fetch(`${srv.baseUrl}/api/v1/realm/emoji/${name}`, {
      method: "POST",
      headers: {
        authorization: basicAuth(srv.owner),
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
      body,
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  }

  async function served(name: string): Promise<string | null> {
    const e = Object.values((await srv.api("GET", "/realm/emoji")).body.emoji).find(
      (x: unknown) => (x as { name: string }).name === name,
    ) as { source_url: string };
    const r = await fetch(new URL(e.source_url, srv.baseUrl));
    return r.headers.get("content-type");
  }

  test("a file part with no Content-Type is typed by its bytes", async () => {
    assertSuccess(await rawUpload("no_type_png", PNG_1X1, "emoji", null));
    assert.equal(await served("no_type_png"), "image/png");
    assertSuccess(await rawUpload("no_type_gif", GIF_1X1, "emoji.bin", null));
    assert.equal(await served("no_type_gif"), "image/gif");
  });

  test("application/octet-stream without a known extension is typed by its bytes", async () => {
    assertSuccess(await rawUpload("octet_jpeg", jpeg(), "upload", "application/octet-stream"));
    assert.equal(await served("octet_jpeg"), "image/jpeg");
  });

  test("an ordinary JPEG is accepted, also under the image/jpg name", async () => {
    assertSuccess(await rawUpload("plain_jpeg", jpeg(), "photo.jpeg", "image/jpeg"));
    assert.equal(await served("plain_jpeg"), "image/jpeg");
    assertSuccess(await rawUpload("jpg_alias", jpeg(), "photo.jpg", "image/jpg"));
    assert.equal(await served("jpg_alias"), "image/jpeg");
  });

  test("bytes that are no image, with no declared type, stay refused", async () => {
    assertError(
      await rawUpload("not_image", Buffer.from("hello"), "x", null),
      "Invalid image format",
      "BAD_IMAGE",
    );
    const list = (await srv.api("GET", "/realm/emoji")).body.emoji;
    assert.ok(!Object.values(list).some((x) => (x as { name: string }).name === "not_image"));
  });
});

describe("GET /messages: integer near operand, message_ids without an anchor", () => {
  const srv = useEmbedded();
  let chA: number;
  let chB: number;
  const sent: number[] = [];
  before(async () => {
    for (const name of ["kb near a", "kb near b"]) {
      const r = await srv.api("POST", "/channels/create", { name, subscribers: [srv.owner.userId] });
      assertSuccess(r);
      if (name.endsWith("a")) chA = r.body.id;
      else chB = r.body.id;
    }
    for (let i = 0; i < 6; i++) {
      const r = await srv.api("POST", "/messages", {
        type: "stream",
        to: i % 2 ? chB : chA,
        topic: "t",
        content: `m${i}`,
      });
      assertSuccess(r);
      sent.push(r.body.id);
    }
  });
  const ids = (r: { body: { messages: { id: number }[] } }) => r.body.messages.map((m) => m.id);

  test("near and id take an integer operand", async () => {
    const r = await srv.api("GET", "/messages", {
      anchor: sent[2],
      num_before: 1,
      num_after: 1,
      narrow: [
        { operator: "channel", operand: chA },
        { operator: "near", operand: sent[2] },
      ],
    });
    assertSuccess(r);
    assert.deepEqual(ids(r), [sent[0], sent[2], sent[4]]);
    const byId = await srv.api("GET", "/messages", {
      anchor: "newest",
      num_before: 10,
      narrow: [{ operator: "id", operand: sent[3] }],
    });
    assertSuccess(byId);
    assert.deepEqual(ids(byId), [sent[3]]);
  });

  test("message_ids alone fetches those messages, with no anchor in the reply", async () => {
    const r = await srv.api("GET", "/messages", { message_ids: [sent[4], sent[1], 999999] });
    assertSuccess(r);
    assert.deepEqual(ids(r), [sent[1], sent[4]]);
    assert.ok(!("anchor" in r.body));
    assert.equal(r.body.found_anchor, false);
    assert.equal(r.body.found_oldest, false);
    assert.equal(r.body.found_newest, false);
    assert.equal(r.body.history_limited, false);
  });

  test("message_ids with a narrow keeps the matching ones, in a channel and across channels", async () => {
    const inA = await srv.api("GET", "/messages", {
      message_ids: sent,
      narrow: [{ operator: "channel", operand: chA }],
    });
    assertSuccess(inA);
    assert.deepEqual(ids(inA), [sent[0], sent[2], sent[4]]);
    const none = await srv.api("GET", "/messages", { message_ids: [] });
    assertSuccess(none);
    assert.deepEqual(none.body.messages, []);
  });

  test("message_ids with an anchor or a window is refused", async () => {
    const combo =
      "Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor";
    assertError(await srv.api("GET", "/messages", { message_ids: [sent[0]], anchor: "newest" }), combo);
    assertError(await srv.api("GET", "/messages", { message_ids: [sent[0]], num_after: 3 }), combo);
    assertError(await srv.api("GET", "/messages", { message_ids: [-1] }), "message_ids[0] is too small");
  });
});

describe("messages show the sender's current name", () => {
  const srv = useEmbedded();

  test("after a rename, GET /messages and later events carry the new sender_full_name", async () => {
    const m = await newUser(srv, 400, "Old Name");
    const ch = await srv.api("POST", "/channels/create", {
      name: "kb rename",
      subscribers: [srv.owner.userId, m.userId],
    });
    assertSuccess(ch);
    const s1 = await srv.api(
      "POST",
      "/messages",
      { type: "stream", to: ch.body.id, topic: "t", content: "x" },
      m,
    );
    assertSuccess(s1);
    const dm = await srv.api(
      "POST",
      "/messages",
      { type: "direct", to: [srv.owner.userId], content: "y" },
      m,
    );
    assertSuccess(dm);
    const q = await openQueue(srv, srv.owner, ["message"]);
    assertSuccess(await srv.api("PATCH", "/settings", { full_name: "New Name" }, m));

    const r = await srv.api("GET", "/messages", { message_ids: [s1.body.id, dm.body.id] });
    assertSuccess(r);
    assert.equal(r.body.messages.length, 2);
    for (const msg of r.body.messages) assert.equal(msg.sender_full_name, "New Name");
    const dmMsg = r.body.messages.find((x: { id: number }) => x.id === dm.body.id);
    assert.equal(
      dmMsg.display_recipient.find((u: { id: number }) => u.id === m.userId).full_name,
      "New Name",
    );

    const s2 = await srv.api(
      "POST",
      "/messages",
      { type: "stream", to: ch.body.id, topic: "t", content: "z" },
      m,
    );
    assertSuccess(s2);
    const evs = await eventsUntil(srv, q, (es) => es.some((e) => e.type === "message"));
    assert.equal(evs.find((e) => e.type === "message").message.sender_full_name, "New Name");
  });
});

describe("message.client from the User-Agent", () => {
  const srv = useEmbedded();
  let ch: number;
  before(async () => {
    const r = await srv.api("POST", "/channels/create", {
      name: "kb client",
      subscribers: [srv.owner.userId],
    });
    assertSuccess(r);
    ch = r.body.id;
  });

  async function sendAs(userAgent: string | null): Promise<string> {
    const headers: Record<string, string> = {
      authorization: basicAuth(srv.owner),
      "content-type": "application/x-www-form-urlencoded",
    };
    if (userAgent !== null) headers["user-agent"] = userAgent;
    const body = new URLSearchParams({ type: "stream", to: String(ch), topic: "ua", content: "hi" });
    const res = await fetch(`${srv.baseUrl}/api/v1/messages`, { method: "POST", headers, body });
    const sent = (await res.json()) as { id: number };
    const r = await srv.api("GET", "/messages", { message_ids: [sent.id] });
    assertSuccess(r);
    return r.body.messages[0].client;
  }

  test("the User-Agent's product name is the client", async () => {
    assert.equal(await sendAs("ZulipPython/0.9.0 (Ubuntu; 22.04)"), "ZulipPython");
    assert.equal(await sendAs("ZulipTerminal/0.7.0 Linux"), "ZulipTerminal");
    assert.equal(await sendAs("ZulipMobile/27.200 (Android 13)"), "ZulipMobile");
    assert.equal(await sendAs("ZulipElectron/5.11.1"), "ZulipElectron");
    assert.equal(await sendAs("ZulipInvalid/1.0"), "ZulipInvalid");
    assert.equal(await sendAs("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"), "Mozilla");
    assert.equal(await sendAs("Zulip Bot 2 (test)"), "Zulip Bot");
    assert.equal(await sendAs("x".repeat(200)), "x".repeat(30));
  });
});
