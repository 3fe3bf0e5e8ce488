// Feature levels 319, 333, 346, 347, 400, 405, 437, 467 and 495: message
// and topic links, user group mentions, uploaded media and Markdown image
// syntax in rendered content (POST /messages/render and sent messages).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import sharp from "sharp";
import {
  createChannel,
  eventsUntil,
  makeApi,
  newUser,
  ok,
  openQueue,
  requireBinaries,
  subscribeTo,
  uniq,
  useChat,
  useCluster,
} from "./support/index.ts";
import { uploadFiles } from "./support/uploads.ts";

const chat = useChat();

async function render(content: string): Promise<string> {
  return ok(await chat.api("POST", "/messages/render", { content })).rendered as string;
}

async function newChannel(): Promise<{ name: string; id: number }> {
  const name = uniq("md");
  return { name, id: await subscribeTo(chat, name) };
}

async function send(to: string, topic: string, content: string): Promise<number> {
  return ok(await chat.api("POST", "/messages", { type: "stream", to, topic, content })).id as number;
}

async function rendered(id: number): Promise<string> {
  return (ok(await chat.api("GET", `/messages/${id}`, {})).message as { content: string }).content;
}

/** Zulip's narrow slug of a channel name (spaces as "-"). */
function chanSlug(name: string): string {
  return name.replace(/ /g, "-");
}

describe("FL 319, 346: message links and the empty topic", () => {
  test("FL 319: #**channel>topic@id** renders a message-link with a /near/ narrow", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`see #**${ch.name}>big news@42**`),
      `<p>see <a class="message-link" href="${base}/topic/big.20news/near/42">#${ch.name} &gt; big news @ 💬</a></p>`,
    );
    // Sent: the same markup; an unknown channel stays text.
    const id = await send(ch.name, "t", `#**${ch.name}>x@7**`);
    assert.equal(
      await rendered(id),
      `<p><a class="message-link" href="${base}/topic/x/near/7">#${ch.name} &gt; x @ 💬</a></p>`,
    );
    assert.equal(await render("#**no such channel>x@7**"), "<p>#<strong>no such channel&gt;x@7</strong></p>");
  });

  test("FL 319: only a trailing @digits is a message id", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`#**${ch.name}>mail a@b**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/mail.20a.40b">#${ch.name} &gt; mail a@b</a></p>`,
    );
  });

  test("FL 346: #**channel>** and #**channel>@id** link the empty topic, shown as <em>general chat</em>", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    assert.equal(
      await render(`#**${ch.name}>**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/">#${ch.name} &gt; <em>general chat</em></a></p>`,
    );
    assert.equal(
      await render(`#**${ch.name}>@5**`),
      `<p><a class="message-link" href="${base}/topic//near/5">#${ch.name} &gt; <em>general chat</em> @ 💬</a></p>`,
    );
  });
});

async function uploadPng(filename: string): Promise<string> {
  const png = await sharp({
    create: { width: 1200, height: 900, channels: 3, background: { r: 9, g: 9, b: 200 } },
  })
    .png()
    .toBuffer();
  const up = await uploadFiles(chat.srv.url, chat.owner, [{ data: png, filename, type: "image/png" }]);
  return ok(up).url as string;
}

function preview(url: string, title: string): string {
  const pathId = url.slice("/user_uploads/".length);
  return (
    `<div class="message_inline_image"><a href="${url}" title="${title}">` +
    `<img data-original-content-type="image/png" data-original-dimensions="1200x900" ` +
    `src="/user_uploads/thumbnail/${pathId}/840x560.webp"></a></div>`
  );
}

describe("FL 437, 467: Markdown image syntax", () => {
  test("FL 437: ![alt](uploaded image) renders Zulip's inline image preview, titled by the alt", async () => {
    const ch = await newChannel();
    const url = await uploadPng("blue.png");
    assert.equal(
      await rendered(await send(ch.name, "img", `![A blue square](${url})`)),
      preview(url, "A blue square"),
    );
    // Beside text: the paragraph keeps a link, the preview follows it.
    const mixed = await rendered(await send(ch.name, "img", `look: ![sq](${url})`));
    assert.ok(mixed.startsWith(`<p>look: <a href="${url}"`), mixed);
    assert.ok(mixed.endsWith(`</p>\n${preview(url, "sq")}`), mixed);
  });

  test("FL 467: ![alt](url) of anything but an uploaded image is a link, never an <img>", async () => {
    const ext = await render("![logo](https://example.com/logo.png)");
    assert.equal(
      ext,
      '<p><a href="https://example.com/logo.png" target="_blank" rel="noopener noreferrer" ' +
        'title="https://example.com/logo.png">logo</a></p>',
    );
    // No alt: the URL is the text. A refused scheme is no link at all.
    assert.match(
      await render("![](https://example.com/a.png)"),
      />https:\/\/example\.com\/a\.png<\/a><\/p>$/,
    );
    // A link inside the alt keeps its text: links never nest.
    assert.equal(
      await render("![see [x](https://a.example/y)](https://z.example/p.png)"),
      '<p><a href="https://z.example/p.png" target="_blank" rel="noopener noreferrer" ' +
        'title="https://z.example/p.png">see x</a></p>',
    );
    const bad = await render("![x](javascript:alert(1))");
    assert.ok(!bad.includes("<a") && !bad.includes("<img"), bad);
    // An uploaded file that is no image: a link, no preview.
    const ch = await newChannel();
    const up = ok(
      await uploadFiles(chat.srv.url, chat.owner, [{ data: Buffer.from("hi"), filename: "a.txt" }]),
    ).url as string;
    const txt = await rendered(await send(ch.name, "img", `![notes](${up})`));
    assert.ok(txt.startsWith(`<p><a href="${up}"`) && !txt.includes("<img"), txt);
  });
});

describe("FL 405, 495: uploaded audio and video play inline", () => {
  const up = "/user_uploads/2/ab/AbCdEfGhIjKlMnOpQrStUvWx";

  test("FL 405: a link to uploaded audio becomes an audio player in place", async () => {
    assert.equal(
      await render(`listen: [song.mp3](${up}/song.mp3)`),
      `<p>listen: <audio controls preload="metadata" src="${up}/song.mp3" title="song.mp3"></audio></p>`,
    );
    for (const ext of ["aac", "flac", "m4a", "WAV", "weba"])
      assert.match(await render(`[a](${up}/a.${ext})`), /^<p><audio controls preload="metadata" /, ext);
    // Audio elsewhere, and types Zulip does not play inline, stay links.
    assert.match(
      await render("[a](https://example.com/a.mp3)"),
      /^<p><a href="https:\/\/example.com\/a.mp3"/,
    );
    assert.match(await render(`[a](${up}/a.ogg)`), /^<p><a href=/);
  });

  test("FL 495: .mov, .mp4 and .webm uploads render as inline video", async () => {
    const video = (file: string, title: string) =>
      `<div class="message_inline_image message_inline_video"><a href="${up}/${file}"${title}>` +
      `<video preload="metadata" src="${up}/${file}"></video></a></div>`;
    assert.equal(await render(`[clip.mov](${up}/clip.mov)`), video("clip.mov", ' title="clip.mov"'));
    assert.equal(await render(`[${up}/a.mp4](${up}/a.mp4)`), video("a.mp4", ""));
    assert.equal(
      await render(`see [the demo](${up}/d.webm) now`),
      `<p>see <a href="${up}/d.webm" target="_blank" rel="noopener noreferrer" title="${up}/d.webm">the demo</a> now</p>\n${video("d.webm", ' title="the demo"')}`,
    );
    assert.match(await render("[v](https://example.com/v.mov)"), /^<p><a href=/);
  });
});

describe("FL 347, 400: topic links point /with/ the topic's latest message", () => {
  test("FL 347, 400: #**channel>topic** links /with/ the newest message, any spelling of the topic", async () => {
    const ch = await newChannel();
    const base = `/#narrow/channel/${ch.id}-${chanSlug(ch.name)}`;
    await send(ch.name, "Alpha", "one");
    const newest = await send(ch.name, "alpha", "two");
    await send(ch.name, "other", "three");
    assert.equal(
      await render(`#**${ch.name}>ALPHA**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/ALPHA/with/${newest}">#${ch.name} &gt; ALPHA</a></p>`,
    );
    // A topic without messages keeps the plain topic narrow.
    assert.equal(
      await render(`#**${ch.name}>empty so far**`),
      `<p><a class="stream-topic" data-stream-id="${ch.id}" href="${base}/topic/empty.20so.20far">#${ch.name} &gt; empty so far</a></p>`,
    );
  });

  test("FL 400: a sent message's topic links, to its own channel and another, carry /with/", async () => {
    const a = await newChannel();
    const b = await newChannel();
    const inA = await send(a.name, "here", "x");
    const inB = await send(b.name, "there", "y");
    const id = await send(a.name, "links", `#**${a.name}>here** and #**${b.name}>there**`);
    const html = await rendered(id);
    assert.ok(html.includes(`/topic/here/with/${inA}"`), html);
    assert.ok(html.includes(`/topic/there/with/${inB}"`), html);
    // An edit renders them again, with the topic's newest message now.
    const later = await send(b.name, "there", "z");
    ok(await chat.api("PATCH", `/messages/${id}`, { content: `#**${b.name}>there**` }));
    assert.ok((await rendered(id)).includes(`/topic/there/with/${later}"`));
  });

  test("FL 400: no message id of a channel the writer cannot read", async () => {
    const name = uniq("md private");
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    await send(name, "secret", "hidden");
    const outsider = await chat.newUser();
    const r = ok(await chat.api("POST", "/messages/render", { content: `#**${name}>secret**` }, outsider))
      .rendered as string;
    assert.ok(!r.includes("/with/"), r);
    // A guest does not read public channels it is not subscribed to.
    const pub = await newChannel();
    await send(pub.name, "open", "visible");
    const guest = await chat.newUser(600);
    const g = ok(await chat.api("POST", "/messages/render", { content: `#**${pub.name}>open**` }, guest))
      .rendered as string;
    assert.ok(g.includes('class="stream-topic"') && !g.includes("/with/"), g);
  });

  test("FL 400: protected history: the newest message the writer received", async () => {
    const name = uniq("md protected");
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    const member = await chat.newUser();
    const before = await send(name, "t", "before the member joined");
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: JSON.stringify([member.userId]),
      }),
    );
    const seen = await send(name, "t", "the member got this");
    ok(
      await chat.api("DELETE", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([name]),
        principals: JSON.stringify([member.userId]),
      }),
    );
    const after = await send(name, "t", "after the member left");
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name }],
        principals: JSON.stringify([member.userId]),
      }),
    );
    const mine = ok(await chat.api("POST", "/messages/render", { content: `#**${name}>t**` }, member))
      .rendered as string;
    assert.ok(mine.includes(`/topic/t/with/${seen}"`), mine);
    const owner = await render(`#**${name}>t**`);
    assert.ok(owner.includes(`/topic/t/with/${after}"`) && before < seen, owner);
  });
});

describe("FL 333: user group mentions", () => {
  async function group(
    name: string,
    members: number[],
    extra: Record<string, unknown> = {},
  ): Promise<number> {
    return ok(
      await chat.api("POST", "/user_groups/create", {
        name,
        description: "d",
        members: JSON.stringify(members),
        ...extra,
      }),
    ).group_id as number;
  }
  async function systemGroupId(name: string): Promise<number> {
    const all = ok(await chat.api("GET", "/user_groups", {})).user_groups as { id: number; name: string }[];
    return all.find((g) => g.name === name)!.id;
  }
  async function flagsOf(id: number, who: { email: string; apiKey: string }): Promise<string[]> {
    return (ok(await chat.api("GET", `/messages/${id}`, {}, who)).message as { flags: string[] }).flags;
  }

  test("FL 333: @*group* and silent @_*group* render Zulip's user-group-mention", async () => {
    const name = uniq("Support");
    const id = await group(name, [chat.owner.userId]);
    assert.equal(
      await render(`hi @*${name}*`),
      `<p>hi <span class="user-group-mention" data-user-group-id="${id}">@${name}</span></p>`,
    );
    assert.equal(
      await render(`@_*${name.toUpperCase()}*`),
      `<p><span class="user-group-mention silent" data-user-group-id="${id}">${name}</span></p>`,
    );
    // Unknown groups and user mention syntax are not group mentions.
    assert.equal(await render("@*no such group*"), "<p>@<em>no such group</em></p>");
  });

  test("FL 333: system groups are mentioned silently, by their display names", async () => {
    const admins = await systemGroupId("role:administrators");
    assert.equal(
      await render("@_*role:administrators*"),
      `<p><span class="user-group-mention silent" data-user-group-id="${admins}">Administrators</span></p>`,
    );
    const ch = await newChannel();
    const id = await send(ch.name, "sys", "@_*role:fullmembers* fyi");
    const full = await systemGroupId("role:fullmembers");
    assert.equal(
      await rendered(id),
      `<p><span class="user-group-mention silent" data-user-group-id="${full}">Full members</span> fyi</p>`,
    );
    // A non-silent mention of a system group is refused (its can_mention_group is nobody), sending nothing.
    const before = ok(await chat.api("GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0 }));
    const r = await chat.api("POST", "/messages", {
      type: "stream",
      to: ch.name,
      topic: "sys",
      content: "@*role:administrators* look",
    });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.deepEqual(
      [r.body.result, r.body.code, r.body.msg],
      ["error", "BAD_REQUEST", "You are not allowed to mention user group 'role:administrators'."],
    );
    const after = ok(await chat.api("GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0 }));
    assert.deepEqual(after.messages, before.messages);
  });

  test("FL 333: members of a mentioned group get the mentioned flag and event; silent mentions flag nobody", async () => {
    const ch = await newChannel();
    const member = await chat.newUser();
    const bystander = await chat.newUser();
    for (const u of [member, bystander])
      ok(
        await chat.api("POST", "/users/me/subscriptions", {
          subscriptions: [{ name: ch.name }],
          principals: JSON.stringify([u.userId]),
        }),
      );
    const inner = uniq("Inner");
    const innerId = await group(inner, [member.userId]);
    const outer = uniq("Outer");
    await group(outer, [], { subgroups: JSON.stringify([innerId]) });
    const q = await openQueue(chat, member, ["message"]);
    const loud = await send(ch.name, "g", `@*${outer}* please`);
    assert.ok((await flagsOf(loud, member)).includes("mentioned"));
    assert.ok(!(await flagsOf(loud, bystander)).includes("mentioned"));
    const evs = await eventsUntil(chat, q, (e) => e.some((x) => x.message?.id === loud));
    const ev = evs.find((x) => x.message?.id === loud);
    assert.ok(ev.flags.includes("mentioned"), JSON.stringify(ev));
    const quiet = await send(ch.name, "g", `@_*${outer}* fyi`);
    assert.ok(!(await flagsOf(quiet, member)).includes("mentioned"));
  });

  test("FL 333: can_mention_group is enforced for non-silent mentions, on send and edit", async () => {
    const ch = await newChannel();
    const writer = await chat.newUser();
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: JSON.stringify([writer.userId]),
      }),
    );
    const name = uniq("Leads");
    const admins = await systemGroupId("role:administrators");
    await group(name, [chat.owner.userId], { can_mention_group: admins });
    const post = (content: string) =>
      chat.api("POST", "/messages", { type: "stream", to: ch.name, topic: "p", content }, writer);
    const denied = await post(`@*${name}*`);
    assert.equal(denied.status, 400);
    assert.equal(denied.body.msg, `You are not allowed to mention user group '${name}'.`);
    assert.equal(denied.body.code, "BAD_REQUEST");
    const id = ok(await post(`@_*${name}* (silent is fine)`)).id as number;
    const edit = await chat.api("PATCH", `/messages/${id}`, { content: `@*${name}*` }, writer);
    assert.equal(edit.status, 400);
    assert.equal(edit.body.msg, `You are not allowed to mention user group '${name}'.`);
    assert.ok((await rendered(id)).includes("user-group-mention silent"));
    // An administrator may.
    ok(
      await chat.api("POST", "/messages", { type: "stream", to: ch.name, topic: "p", content: `@*${name}*` }),
    );
  });

  test("FL 333: a deactivated group's mention is silent and flags nobody", async () => {
    const ch = await newChannel();
    const member = await chat.newUser();
    ok(
      await chat.api("POST", "/users/me/subscriptions", {
        subscriptions: [{ name: ch.name }],
        principals: JSON.stringify([member.userId]),
      }),
    );
    const name = uniq("Old team");
    const id = await group(name, [member.userId]);
    ok(await chat.api("POST", `/user_groups/${id}/deactivate`, {}));
    const msg = await send(ch.name, "d", `@*${name}*`);
    assert.equal(
      await rendered(msg),
      `<p><span class="user-group-mention silent" data-user-group-id="${id}">${name}</span></p>`,
    );
    assert.ok(!(await flagsOf(msg, member)).includes("mentioned"));
  });
});

describe("FL 333, 400: in cluster mode", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("FL 333, 400: topic links across channels carry /with/; group members get the mentioned flag", async () => {
    const md = await newUser(c, "member", "Md Member");
    const memberId = md.userId;
    const member = makeApi(c.baseUrl, md);
    const ids: number[] = [];
    for (const name of ["md one", "md two", "md three"])
      ids.push((await createChannel(c, [md], { name })).id);
    const post = async (to: string, topic: string, content: string) =>
      ok(await c.api("POST", "/messages", { type: "stream", to, topic, content })).id as number;
    const inTwo = await post("md two", "plans", "x");
    const inThree = await post("md three", "notes", "y");
    const group = ok(
      await c.api("POST", "/user_groups/create", {
        name: "md crew",
        description: "d",
        members: JSON.stringify([memberId]),
      }),
    ).group_id as number;
    const id = await post("md one", "links", "#**md two>plans** #**md three>notes** @*md crew*");
    const m = ok(await member("GET", `/messages/${id}`, {})).message as { content: string; flags: string[] };
    assert.ok(m.content.includes(`/channel/${ids[1]}-md-two/topic/plans/with/${inTwo}"`), m.content);
    assert.ok(m.content.includes(`/channel/${ids[2]}-md-three/topic/notes/with/${inThree}"`), m.content);
    assert.ok(
      m.content.includes(`<span class="user-group-mention" data-user-group-id="${group}">@md crew</span>`),
    );
    assert.ok(m.flags.includes("mentioned"), JSON.stringify(m.flags));
    const preview = ok(await c.api("POST", "/messages/render", { content: "#**md two>plans**" }))
      .rendered as string;
    assert.ok(preview.includes(`/topic/plans/with/${inTwo}"`), preview);
  });
});
