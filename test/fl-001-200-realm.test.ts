// PATCH /realm settings of feature levels 1-200 that were reported but not
// settable: video_chat_provider (1), default_language and
// default_code_block_language (52), gif_rating_policy (55), org_type (128),
// want_advertise_in_communities_directory (129); and the owner-only
// settings of level 143.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  useEmbedded,
  type Member,
} from "./support/index.ts";

const srv = useEmbedded();
let admin: Member;
let member: Member;

before(async () => {
  admin = await newUser(srv, 200);
  member = await newUser(srv, 400);
});

async function realmState(): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] });
  assertSuccess(r);
  // Only the realm's state: the queue id differs on every call.
  const { queue_id: _queue, ...state } = r.body as Record<string, unknown>;
  return state;
}

describe("PATCH /realm stored settings", () => {
  test("defaults - register reports Zulip's defaults", async () => {
    const s = await realmState();
    assert.equal(s.realm_video_chat_provider, 1);
    assert.equal(s.realm_gif_rating_policy, 2);
    assert.equal(s.realm_org_type, 0);
    assert.equal(s.realm_default_code_block_language, "");
    assert.equal(s.realm_default_language, "en");
    assert.equal(s.realm_want_advertise_in_communities_directory, false);
  });

  test("update - the changed values are echoed, kept, and sent to every user as realm update events", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const changes = {
      video_chat_provider: 0,
      gif_rating_policy: 4,
      org_type: 20,
      default_code_block_language: "python",
      default_language: "de",
      want_advertise_in_communities_directory: true,
    };
    const r = await srv.api("PATCH", "/realm", changes);
    assertSuccess(r);
    for (const [k, v] of Object.entries(changes)) assert.equal(r.body[k], v, k);
    const s = await realmState();
    for (const [k, v] of Object.entries(changes)) assert.equal(s[`realm_${k}`], v, k);
    const evs = await eventsUntil(srv, q, (e) => e.length >= 6);
    assert.deepEqual(
      evs.map((e) => [e.type, e.op, e.property, e.value]).sort(),
      Object.entries(changes)
        .map(([k, v]) => ["realm", "update", k, v])
        .sort(),
    );
    // An unchanged value is left out of the reply and sends nothing.
    const again = await srv.api("PATCH", "/realm", { video_chat_provider: 0 });
    assertSuccess(again);
    assert.equal(again.body.video_chat_provider, undefined);
    assert.deepEqual(await eventsUntil(srv, q, () => false), []);
    // "None" can be switched back to Jitsi.
    assertSuccess(await srv.api("PATCH", "/realm", { video_chat_provider: 1 }));
    assert.equal((await realmState()).realm_video_chat_provider, 1);
  });

  test("errors - unknown ids and languages are refused and change nothing", async () => {
    const before = await realmState();
    assertError(
      await srv.api("PATCH", "/realm", { video_chat_provider: 7 }),
      "Invalid video_chat_provider 7",
    );
    assertError(await srv.api("PATCH", "/realm", { gif_rating_policy: 9 }), "Invalid gif_rating_policy 9");
    assertError(await srv.api("PATCH", "/realm", { org_type: 11 }), "Invalid org_type 11");
    assertError(await srv.api("PATCH", "/realm", { default_language: "xx" }), "Invalid language 'xx'");
    assertError(
      await srv.api("PATCH", "/realm", { default_language: "__proto__" }),
      "Invalid language '__proto__'",
    );
    const notInt = await srv.api("PATCH", "/realm", { org_type: "ten" });
    assert.equal(notInt.status, 400);
    assert.equal(notInt.body.result, "error");
    // A bad value in the same request as a good one: nothing applies.
    assertError(
      await srv.api("PATCH", "/realm", { org_type: 30, gif_rating_policy: -1 }),
      "Invalid gif_rating_policy -1",
    );
    assert.deepEqual(await realmState(), before);
  });

  test("permissions - members may not change them", async () => {
    const r = await srv.api("PATCH", "/realm", { org_type: 90 }, member);
    assert.equal(r.status, 400);
    assert.equal(r.body.msg, "Must be an organization administrator");
    assert.equal((await realmState()).realm_org_type, 20);
  });
});

describe("PATCH /realm owner-only settings (feature level 143)", () => {
  test("an administrator who is not an owner may not change them", async () => {
    for (const name of [
      "invite_required",
      "emails_restricted_to_domains",
      "disallow_disposable_email_addresses",
    ]) {
      const before = (await realmState())[`realm_${name}`];
      assertError(
        await srv.api("PATCH", "/realm", { [name]: !before }, admin),
        "Must be an organization owner",
        "UNAUTHORIZED_PRINCIPAL",
      );
      assert.equal((await realmState())[`realm_${name}`], before, name);
    }
    // Other settings stay open to administrators.
    assertSuccess(await srv.api("PATCH", "/realm", { gif_rating_policy: 1 }, admin));
  });

  test("an owner may", async () => {
    const before = (await realmState()).realm_invite_required;
    const r = await srv.api("PATCH", "/realm", { invite_required: !before });
    assertSuccess(r);
    assert.equal((await realmState()).realm_invite_required, !before);
  });
});

describe("PATCH /realm name and description (feature level 52: plain strings)", () => {
  test("update - raw strings are kept as sent, echoed, evented, and shown by server_settings", async () => {
    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { name: 'Acme "Org"', description: "We **build** things" });
    assertSuccess(r);
    assert.equal(r.body.name, 'Acme "Org"');
    assert.equal(r.body.description, "We **build** things");
    const s = await realmState();
    assert.equal(s.realm_name, 'Acme "Org"');
    assert.equal(s.realm_description, "We **build** things");
    const evs = await eventsUntil(srv, q, (e) => e.length >= 2);
    // The description's event is an update_dict since FL 464 (test/fl-rlim.test.ts).
    const descr = (e: Record<string, unknown>) =>
      (e.data as Record<string, unknown> | undefined)?.description;
    assert.deepEqual(evs.map((e) => [e.type, e.op, e.property, e.value ?? descr(e)]).sort(), [
      ["realm", "update", "name", 'Acme "Org"'],
      ["realm", "update_dict", "default", "We **build** things"],
    ]);
    const info = await srv.api("GET", "/server_settings", {}, null);
    assert.equal(info.body.realm_name, 'Acme "Org"');
    assert.match(
      info.body.realm_description as string,
      /^<p>We \*\*build\*\* things<\/p>$|<strong>build<\/strong>/,
    );
  });

  test("errors - over-long values are refused and change nothing; members may not rename", async () => {
    assertError(
      await srv.api("PATCH", "/realm", { name: "n".repeat(41) }),
      "name is too long (limit: 40 characters)",
    );
    assertError(
      await srv.api("PATCH", "/realm", { description: "d".repeat(1001) }),
      "description is too long (limit: 1000 characters)",
    );
    const r = await srv.api("PATCH", "/realm", { name: "Mine" }, member);
    assert.equal(r.body.msg, "Must be an organization administrator");
    assert.equal((await realmState()).realm_name, 'Acme "Org"');
  });
});
