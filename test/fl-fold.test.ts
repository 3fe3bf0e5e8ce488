// Black-box tests of the feature levels closed on the "fold" branch
// (docs/feature-levels/373-496.md): channel folders (389, 414, 418),
// navigation views (390) and the realm topics_policy (392).

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let member: Member;
let admin: Member;

before(async () => {
  member = await newUser(srv);
  admin = await newUser(srv, 200);
});

let seq = 0;
async function channel(extra: Record<string, unknown> = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", {
    name: `fold-${++seq}`,
    subscribers: [srv.owner.userId, member.userId],
    ...extra,
  });
  assertSuccess(r);
  return r.body.id as number;
}

async function registerRealm(auth: Member | null = null): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, auth ?? srv.owner);
  assertSuccess(r);
  return r.body;
}

describe("FL 392: realm topics_policy and can_set_topics_policy_group", () => {
  test("FL 392: realm topics_policy is set by PATCH /realm, announced, registered, and rules inheriting channels", async () => {
    const before = await registerRealm(member);
    assert.equal(before.realm_topics_policy, "allow_empty_topic");
    assert.equal(before.realm_mandatory_topics, false);
    const inherits = await channel();
    const allows = await channel({ topics_policy: "allow_empty_topic" });
    const send = (stream: number, topic: string, auth: Member | null = null) =>
      srv.api("POST", "/messages", { type: "stream", to: stream, topic, content: "hi" }, auth ?? srv.owner);
    assertSuccess(await send(inherits, ""));

    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { topics_policy: "disable_empty_topic" }, admin);
    assertSuccess(r);
    assert.equal(r.body.topics_policy, "disable_empty_topic");
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm"));
    assert.deepEqual(
      evs.filter((e) => e.type === "realm").map((e) => [e.op, e.property, e.value]),
      [["update", "topics_policy", "disable_empty_topic"]],
    );
    const reg = await registerRealm(member);
    assert.equal(reg.realm_topics_policy, "disable_empty_topic");
    assert.equal(reg.realm_mandatory_topics, true);

    assertError(
      await send(inherits, "", member),
      "Sending messages to the general chat is not allowed in this channel.",
    );
    assertError(
      await send(inherits, "general chat", member),
      "Sending messages to the general chat is not allowed in this channel.",
    );
    assertSuccess(await send(inherits, "named", member));
    // A channel's own policy wins over the realm's.
    assertSuccess(await send(allows, "", member));
    // Moving a message into the empty topic of an inheriting channel is refused too.
    const named = await send(inherits, "to-move");
    assertSuccess(named);
    assertError(
      await srv.api("PATCH", `/messages/${named.body.id}`, { topic: "" }),
      "Sending messages to the general chat is not allowed in this channel.",
    );

    assertSuccess(await srv.api("PATCH", "/realm", { topics_policy: "allow_empty_topic" }));
    assertSuccess(await send(inherits, "", member));
    assert.equal((await registerRealm()).realm_mandatory_topics, false);
  });

  test("FL 392: PATCH /realm topics_policy refuses members, unknown values and mandatory_topics, changing nothing", async () => {
    assertError(
      await srv.api("PATCH", "/realm", { topics_policy: "disable_empty_topic" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    // "empty_topic_only" is a channel policy only.
    assertError(
      await srv.api("PATCH", "/realm", { topics_policy: "empty_topic_only" }),
      "Invalid topics_policy",
    );
    assertError(await srv.api("PATCH", "/realm", { topics_policy: "inherit" }), "Invalid topics_policy");
    assertError(await srv.api("PATCH", "/realm", { topics_policy: "__proto__" }), "Invalid topics_policy");
    // Removed from PATCH /realm at FL 392: ignored like any unknown parameter.
    const r = await srv.api("PATCH", "/realm", { mandatory_topics: true });
    assert.notEqual(r.status, 500);
    const reg = await registerRealm();
    assert.equal(reg.realm_topics_policy, "allow_empty_topic");
    assert.equal(reg.realm_mandatory_topics, false);
  });

  test("FL 392: a channel's topics_policy needs can_set_topics_policy_group unless it is inherit", async () => {
    const admins = (await srv.api("GET", "/user_groups")).body.user_groups.find(
      (g: { name: string }) => g.name === "role:administrators",
    ).id as number;
    assertSuccess(
      await srv.api("PATCH", "/realm", { can_set_topics_policy_group: JSON.stringify({ new: admins }) }),
    );
    try {
      // A member may create a channel, but not with a policy of their own.
      assertError(
        await srv.api(
          "POST",
          "/channels/create",
          { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "disable_empty_topic" },
          member,
        ),
        "Insufficient permission",
      );
      const mine = await srv.api(
        "POST",
        "/channels/create",
        { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "inherit" },
        member,
      );
      assertSuccess(mine);
      const id = mine.body.id as number;
      // The creator administers the channel, but the realm group says no.
      assertError(
        await srv.api("PATCH", `/streams/${id}`, { topics_policy: "empty_topic_only" }, member),
        "Insufficient permission",
      );
      const s = await srv.api("GET", `/streams/${id}`, {}, member);
      assert.equal(s.body.stream.topics_policy, "inherit");
      // Administrators always may.
      assertSuccess(
        await srv.api("PATCH", `/streams/${id}`, { topics_policy: "disable_empty_topic" }, admin),
      );
    } finally {
      const members = (await srv.api("GET", "/user_groups")).body.user_groups.find(
        (g: { name: string }) => g.name === "role:members",
      ).id as number;
      assertSuccess(
        await srv.api("PATCH", "/realm", { can_set_topics_policy_group: JSON.stringify({ new: members }) }),
      );
    }
    // Back to the default (members): the member may now.
    const mine = await srv.api(
      "POST",
      "/channels/create",
      { name: `fold-m-${++seq}`, subscribers: [member.userId], topics_policy: "disable_empty_topic" },
      member,
    );
    assertSuccess(mine);
  });
});

describe("FL 390: navigation views", () => {
  test("FL 390: navigation views are added, listed, edited and removed, with events to the owner only and register state", async () => {
    const me = await newUser(srv);
    const other = await newUser(srv);
    const reg0 = await srv.api("POST", "/register", { fetch_event_types: ["navigation_views"] }, me);
    assertSuccess(reg0);
    assert.deepEqual(reg0.body.navigation_views, []);
    const q = await openQueue(srv, me, ["navigation_view"]);
    const qOther = await openQueue(srv, other, ["navigation_view"]);

    assertSuccess(await srv.api("POST", "/navigation_views", { fragment: "inbox", is_pinned: false }, me));
    assertSuccess(
      await srv.api(
        "POST",
        "/navigation_views",
        { fragment: " narrow/channel/9-x ", is_pinned: true, name: " My view " },
        me,
      ),
    );
    const list = await srv.api("GET", "/navigation_views", {}, me);
    assertSuccess(list);
    assert.deepEqual(list.body.navigation_views, [
      { fragment: "inbox", is_pinned: false, name: null },
      { fragment: "narrow/channel/9-x", is_pinned: true, name: "My view" },
    ]);
    // A fragment with slashes in the path, raw or percent-encoded.
    assertSuccess(await srv.api("PATCH", "/navigation_views/narrow/channel/9-x", { is_pinned: false }, me));
    assertSuccess(
      await srv.api(
        "PATCH",
        `/navigation_views/${encodeURIComponent("narrow/channel/9-x")}`,
        { name: "Renamed" },
        me,
      ),
    );
    assertSuccess(await srv.api("PATCH", "/navigation_views/inbox", { is_pinned: true }, me));
    assertSuccess(
      await srv.api("DELETE", `/navigation_views/${encodeURIComponent("narrow/channel/9-x")}`, {}, me),
    );

    const evs = await eventsUntil(srv, q, (e) => e.length >= 6);
    assert.deepEqual(
      evs.map(({ id: _id, ...e }) => e),
      [
        {
          type: "navigation_view",
          op: "add",
          navigation_view: { fragment: "inbox", is_pinned: false, name: null },
        },
        {
          type: "navigation_view",
          op: "add",
          navigation_view: { fragment: "narrow/channel/9-x", is_pinned: true, name: "My view" },
        },
        { type: "navigation_view", op: "update", fragment: "narrow/channel/9-x", data: { is_pinned: false } },
        { type: "navigation_view", op: "update", fragment: "narrow/channel/9-x", data: { name: "Renamed" } },
        { type: "navigation_view", op: "update", fragment: "inbox", data: { is_pinned: true } },
        { type: "navigation_view", op: "remove", fragment: "narrow/channel/9-x" },
      ],
    );
    assert.deepEqual(await eventsUntil(srv, qOther, () => false), []);
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["navigation_views"] }, me);
    assert.deepEqual(reg.body.navigation_views, [{ fragment: "inbox", is_pinned: true, name: null }]);
    const theirs = await srv.api("GET", "/navigation_views", {}, other);
    assert.deepEqual(theirs.body.navigation_views, []);
  });

  test("FL 390: bad navigation view requests get Zulip's errors and change nothing", async () => {
    const me = await newUser(srv);
    assertSuccess(await srv.api("POST", "/navigation_views", { fragment: "recent", is_pinned: true }, me));
    assertSuccess(
      await srv.api(
        "POST",
        "/navigation_views",
        { fragment: "__proto__", is_pinned: true, name: "constructor" },
        me,
      ),
    );
    const cases: [string, string, Record<string, unknown>, string, number?, string?][] = [
      [
        "POST",
        "/navigation_views",
        { fragment: "inbox", is_pinned: true, name: "x" },
        "Built-in views cannot have a custom name.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/is/dm", is_pinned: true },
        "Custom views must have a valid name.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "recent", is_pinned: false },
        "Navigation view already exists.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/x", is_pinned: false, name: "constructor" },
        "Navigation view already exists.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "   ", is_pinned: false, name: "y" },
        "fragment is too short.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/a\u0000b", is_pinned: false, name: "z" },
        "Invalid fragment",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/y", is_pinned: false, name: "  " },
        "name is too short.",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/y", is_pinned: 5, name: "n" },
        "is_pinned is not a boolean",
      ],
      [
        "POST",
        "/navigation_views",
        { fragment: "narrow/y", name: "n" },
        "Missing 'is_pinned' argument",
        400,
        "REQUEST_VARIABLE_MISSING",
      ],
      ["PATCH", "/navigation_views/recent", { name: "Mine" }, "Built-in views cannot have a custom name."],
      ["PATCH", "/navigation_views/__proto__", { name: "constructor" }, "Navigation view already exists."],
      ["PATCH", "/navigation_views/narrow/none", { is_pinned: true }, "Navigation view does not exist.", 404],
      ["PATCH", "/navigation_views/constructor", { is_pinned: true }, "Navigation view does not exist.", 404],
      ["DELETE", "/navigation_views/narrow/none", {}, "Navigation view does not exist.", 404],
    ];
    for (const [method, path, params, msg, status, code] of cases) {
      const r = await srv.api(method, path, params, me);
      assert.notEqual(r.status, 500, `${method} ${path}`);
      assertError(r, msg, code ?? "BAD_REQUEST", status ?? 400);
    }
    const list = await srv.api("GET", "/navigation_views", {}, me);
    assert.deepEqual(list.body.navigation_views, [
      { fragment: "recent", is_pinned: true, name: null },
      { fragment: "__proto__", is_pinned: true, name: "constructor" },
    ]);
    assertError(
      await srv.api("GET", "/navigation_views", {}, null),
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
    );
  });
});

describe("FL 389/414/418: channel folders", () => {
  const folders = async (auth: Member | null = null, includeArchived = false) => {
    const r = await srv.api(
      "GET",
      "/channel_folders",
      includeArchived ? { include_archived: true } : {},
      auth ?? srv.owner,
    );
    assertSuccess(r);
    return r.body.channel_folders as Record<string, unknown>[];
  };

  test("FL 389: administrators create and update channel folders; everyone hears it and reads them; register has them", async () => {
    const guest = await newUser(srv, 600);
    const q = await openQueue(srv, guest, ["channel_folder"]);
    const made = await srv.api(
      "POST",
      "/channel_folders/create",
      { name: "Frontend", description: "**UI** work" },
      admin,
    );
    assertSuccess(made);
    const id = made.body.channel_folder_id as number;
    assert.equal(typeof id, "number");
    const [add] = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.equal(add.type, "channel_folder");
    assert.equal(add.op, "add");
    const folder = add.channel_folder;
    assert.deepEqual(
      { ...folder, date_created: 0 },
      {
        id,
        name: "Frontend",
        description: "**UI** work",
        rendered_description: "<p><strong>UI</strong> work</p>",
        order: id,
        creator_id: admin.userId,
        date_created: 0,
        is_archived: false,
      },
    );
    assert.equal(typeof folder.date_created, "number");
    assert.ok((await folders(guest)).some((f) => f.id === id && f.name === "Frontend"));

    assertSuccess(await srv.api("PATCH", `/channel_folders/${id}`, { name: "Front end", description: "UI" }));
    // Unchanged values make no event.
    assertSuccess(await srv.api("PATCH", `/channel_folders/${id}`, { name: "Front end" }));
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    assert.deepEqual(
      evs.map(({ id: _id, ...e }) => e),
      [
        { type: "channel_folder", op: "update", channel_folder_id: id, data: { name: "Front end" } },
        {
          type: "channel_folder",
          op: "update",
          channel_folder_id: id,
          data: { description: "UI", rendered_description: "<p>UI</p>" },
        },
      ],
    );
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["channel_folders"] }, guest);
    assertSuccess(reg);
    const mine = (reg.body.channel_folders as { id: number }[]).find((f) => f.id === id);
    assert.equal((mine as Record<string, unknown>).name, "Front end");
  });

  test("FL 389: channels join, leave and keep folders from archiving; bad folder ids are refused", async () => {
    const f = await srv.api("POST", "/channel_folders/create", { name: `Busy ${++seq}`, description: "" });
    assertSuccess(f);
    const folderId = f.body.channel_folder_id as number;
    const q = await openQueue(srv, member, ["stream"]);
    const id = await channel({ folder_id: folderId });
    let s = await srv.api("GET", `/streams/${id}`);
    assert.equal(s.body.stream.folder_id, folderId);
    assertError(
      await srv.api("PATCH", `/channel_folders/${folderId}`, { is_archived: true }),
      "You need to remove all the channels from this folder to archive it.",
    );
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { folder_id: null }));
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { folder_id: folderId }));
    const evs = await eventsUntil(
      srv,
      q,
      (e) => e.filter((x) => x.op === "update" && x.property === "folder_id").length >= 2,
    );
    assert.deepEqual(
      evs.filter((x) => x.op === "update" && x.property === "folder_id").map((x) => [x.stream_id, x.value]),
      [
        [id, null],
        [id, folderId],
      ],
    );
    assertError(await srv.api("PATCH", `/streams/${id}`, { folder_id: 987654 }), "Invalid channel folder ID");
    assertError(
      await srv.api("POST", "/channels/create", {
        name: `fold-bad-${++seq}`,
        subscribers: [],
        folder_id: 987654,
      }),
      "Invalid channel folder ID",
    );
    s = await srv.api("GET", `/streams/${id}`);
    assert.equal(s.body.stream.folder_id, folderId);
    // The legacy subscribe creates channels in a folder too, and checks it the same way.
    const legacyName = `fold-legacy-${++seq}`;
    assertError(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name: legacyName }]),
        folder_id: 987654,
      }),
      "Invalid channel folder ID",
    );
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", {
        subscriptions: JSON.stringify([{ name: legacyName }]),
        folder_id: folderId,
      }),
    );
    const legacy = await srv.api("GET", "/get_stream_id", { stream: legacyName });
    assertSuccess(legacy);
    assert.equal((await srv.api("GET", `/streams/${legacy.body.stream_id}`)).body.stream.folder_id, folderId);
    assertSuccess(await srv.api("PATCH", `/streams/${legacy.body.stream_id}`, { folder_id: null }));
    // Emptied, the folder archives; archived folders leave the default list.
    assertSuccess(await srv.api("PATCH", `/streams/${id}`, { folder_id: null }));
    assertSuccess(await srv.api("PATCH", `/channel_folders/${folderId}`, { is_archived: true }));
    assert.ok(!(await folders()).some((x) => x.id === folderId));
    assert.ok((await folders(null, true)).some((x) => x.id === folderId && x.is_archived === true));
    assertSuccess(await srv.api("PATCH", `/channel_folders/${folderId}`, { is_archived: false }));
    assert.ok((await folders()).some((x) => x.id === folderId));
  });

  test("FL 389: channel folder errors, permission denials and bad input change nothing", async () => {
    const f = await srv.api("POST", "/channel_folders/create", { name: `Taken ${++seq}`, description: "" });
    assertSuccess(f);
    const taken = (await folders(null, true)).find((x) => x.id === f.body.channel_folder_id)!.name as string;
    const before = await folders(null, true);
    const cases: [string, string, Record<string, unknown>, Member | null, string, string?, number?][] = [
      [
        "POST",
        "/channel_folders/create",
        { name: "Mine", description: "" },
        member,
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      ],
      [
        "POST",
        "/channel_folders/create",
        { name: "  ", description: "" },
        null,
        "Channel folder name can't be empty.",
      ],
      [
        "POST",
        "/channel_folders/create",
        { name: "a\u0001b", description: "" },
        null,
        "Invalid character in channel folder name, at position 2.",
      ],
      [
        "POST",
        "/channel_folders/create",
        { name: taken.toUpperCase(), description: "" },
        null,
        "Channel folder name already in use",
      ],
      [
        "POST",
        "/channel_folders/create",
        { name: "x".repeat(61), description: "" },
        null,
        "name is too long (limit: 60 characters)",
      ],
      [
        "POST",
        "/channel_folders/create",
        { name: "Long", description: "d".repeat(1025) },
        null,
        "description is too long (limit: 1024 characters)",
      ],
      [
        "POST",
        "/channel_folders/create",
        { description: "" },
        null,
        "Missing 'name' argument",
        "REQUEST_VARIABLE_MISSING",
      ],
      [
        "PATCH",
        `/channel_folders/${f.body.channel_folder_id}`,
        { name: "Renamed" },
        member,
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      ],
      ["PATCH", "/channel_folders/987654", { name: "Renamed" }, null, "Invalid channel folder ID"],
      [
        "PATCH",
        `/channel_folders/${f.body.channel_folder_id}`,
        { is_archived: "yes" },
        null,
        "is_archived is not valid JSON",
      ],
      ["PATCH", "/channel_folders", { order: [] }, null, "Invalid order mapping."],
      ["PATCH", "/channel_folders", { order: '[1, "x"]' }, null, "order[1] is not an integer"],
      [
        "PATCH",
        "/channel_folders",
        { order: JSON.stringify(before.map((x) => x.id)) },
        member,
        "Must be an organization administrator",
        "UNAUTHORIZED_PRINCIPAL",
      ],
    ];
    for (const [method, path, params, auth, msg, code, status] of cases) {
      const r = await srv.api(method, path, params, auth ?? srv.owner);
      assert.notEqual(r.status, 500, `${method} ${path} ${JSON.stringify(params)}`);
      assertError(r, msg, code ?? "BAD_REQUEST", status ?? 400);
    }
    // A name made of prototype keys is a name like any other.
    const proto = await srv.api("POST", "/channel_folders/create", {
      name: "__proto__",
      description: "constructor",
    });
    assertSuccess(proto);
    assert.deepEqual(
      (await folders(null, true)).filter((x) => x.id !== proto.body.channel_folder_id),
      before,
    );
  });

  test("FL 414/418: PATCH /channel_folders reorders them; the order reaches everyone as a reorder event", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await srv.api("POST", "/channel_folders/create", {
        name: `Ordered ${++seq}`,
        description: "",
      });
      assertSuccess(r);
      ids.push(r.body.channel_folder_id as number);
    }
    const all = (await folders(null, true)).map((x) => x.id as number);
    const others = all.filter((id) => !ids.includes(id));
    const order = [ids[2]!, ...others, ids[0]!, ids[1]!];
    const q = await openQueue(srv, member, ["channel_folder"]);
    assertSuccess(await srv.api("PATCH", "/channel_folders", { order: JSON.stringify(order) }));
    const [ev] = await eventsUntil(srv, q, (e) => e.length >= 1);
    assert.deepEqual(
      { type: ev.type, op: ev.op, order: ev.order },
      { type: "channel_folder", op: "reorder", order },
    );
    const listed = await folders(member, true);
    assert.deepEqual(
      listed.map((x) => x.id),
      order,
    );
    assert.deepEqual(
      listed.map((x) => x.order),
      order.map((_, i) => i),
    );
    const reg = await srv.api("POST", "/register", { fetch_event_types: ["channel_folders"] }, member);
    assert.deepEqual(
      (reg.body.channel_folders as { id: number }[]).map((x) => x.id),
      order,
    );
  });
});

const skipCluster = requireBinaries("nats-server", "redis-server");

describe("FL 389/390/392/414 - cluster", { skip: skipCluster }, () => {
  const c = useCluster();

  test("FL 389/390/392/414: folders, navigation views and the realm topics_policy across the gateway", async () => {
    const watcher = await newUser(c);
    const q = await openQueue(c, watcher, ["channel_folder", "navigation_view", "realm"]);
    const made = await c.api("POST", "/channel_folders/create", { name: "Cluster folder", description: "" });
    assertSuccess(made);
    const folderId = made.body.channel_folder_id as number;
    const ch = await c.api("POST", "/channels/create", {
      name: "fold-cluster",
      subscribers: [watcher.userId],
      folder_id: folderId,
    });
    assertSuccess(ch);
    assert.equal((await c.api("GET", `/streams/${ch.body.id}`)).body.stream.folder_id, folderId);
    assertSuccess(await c.api("PATCH", "/channel_folders", { order: JSON.stringify([folderId]) }));
    assertSuccess(await c.api("POST", "/navigation_views", { fragment: "inbox", is_pinned: true }, watcher));
    assertSuccess(await c.api("PATCH", "/realm", { topics_policy: "disable_empty_topic" }));
    const evs = await eventsUntil(c, q, (e) => e.length >= 4);
    assert.deepEqual(
      evs.map((e) => `${e.type}/${e.op}`),
      ["channel_folder/add", "channel_folder/reorder", "navigation_view/add", "realm/update"],
    );
    assertError(
      await c.api("POST", "/messages", { type: "stream", to: ch.body.id, topic: "", content: "x" }, watcher),
      "Sending messages to the general chat is not allowed in this channel.",
    );
    const reg = await c.api(
      "POST",
      "/register",
      { fetch_event_types: ["channel_folders", "navigation_views", "realm"] },
      watcher,
    );
    assertSuccess(reg);
    assert.deepEqual(
      (reg.body.channel_folders as { id: number; order: number }[]).map((f) => [f.id, f.order]),
      [[folderId, 0]],
    );
    assert.deepEqual(reg.body.navigation_views, [{ fragment: "inbox", is_pinned: true, name: null }]);
    assert.equal(reg.body.realm_topics_policy, "disable_empty_topic");
    assert.equal(reg.body.realm_mandatory_topics, true);
  });
});
