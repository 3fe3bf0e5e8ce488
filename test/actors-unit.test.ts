// Unit tests of the realm and user behaviours, with no network and no store:
// a fake runtime drives handlers the way cluster/catalog.ts does (decide,
// then fold the facts with `apply`, then reply), keeps journals, and records
// events and notices. Every test also checks that replaying the journals
// from scratch, and a snapshot round trip, rebuild the same state.

import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { behaviors, realmDirectoryRef, realmRef, userRef } from "../actors/index.ts";
import {
  checkEmojiRequest,
  emojiDataForName,
  unicodeCodeForName,
  unicodeNameForCode,
} from "../actors/emoji/index.ts";
import { ZulipError } from "../actors/errors.ts";
import type { RealmState } from "../actors/realm/index.ts";
import type { ArgsOf, MethodOf, Protocol, Ref, ReplyOf, UntypedRef } from "../actors/protocol.ts";
import type { ActorContext, ActorRef, Behavior, Caller, Obj, OutEvent, Value } from "../actors/types.ts";
import type { StatusChange, UserState } from "../actors/user/index.ts";
import { checkFullName, isValidEmail } from "../actors/user/index.ts";

const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

function idOf(ref: ActorRef): string {
  return `${ref.kind}/${ref.realm}/${ref.key}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function behaviorOf(ref: ActorRef): Behavior<any> {
  const b = behaviors[ref.kind];
  if (!b) throw new Error(`no behavior for ${ref.kind}`);
  return b;
}

/** JSON round trip: what crossing the wire (protobuf Value) does to plain data. */
function wire<T>(v: T): T {
  return v === undefined ? (null as T) : (JSON.parse(JSON.stringify(v)) as T);
}

class FakeRuntime {
  readonly states = new Map<string, unknown>();
  readonly journals = new Map<string, Obj[]>();
  readonly refs = new Map<string, ActorRef>();
  events: { from: ActorRef; out: OutEvent }[] = [];
  notices: { subject: string; data: Obj }[] = [];
  private readonly counters = new Map<string, number>();
  clock = T0;

  state<S>(ref: ActorRef): S {
    const id = idOf(ref);
    if (!this.states.has(id)) this.states.set(id, behaviorOf(ref).initial(ref));
    return this.states.get(id) as S;
  }

  /** Typed on the kinds with a protocol, as the node's call is (actors/protocol.ts). */
  call<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller?: Caller | null,
  ): Promise<ReplyOf<P, M>>;
  call(ref: UntypedRef, method: string, args?: Obj, caller?: Caller | null): Promise<Value>;
  async call(ref: ActorRef, method: string, args: Obj = {}, caller: Caller | null = null): Promise<Value> {
    const behavior = behaviorOf(ref);
    const handler = behavior.handlers[method];
    if (!handler) throw new Error(`${ref.kind} has no method ${method}`);
    const id = idOf(ref);
    this.refs.set(id, ref);
    const ctx: ActorContext = {
      self: ref,
      now: () => this.clock,
      call: (r: ActorRef, m: string, a: Obj, c?: Caller | null) => this.call(r, m, wire(a), c ?? null),
      nextId: async (counter) => {
        const key = `${ref.realm}:${counter}`;
        const next = (this.counters.get(key) ?? 0) + 1;
        this.counters.set(key, next);
        return next;
      },
      // No timers or parked turns in this harness.
      schedule: () => {},
      parked: () => [],
    };
    const decision = await handler(this.state(ref), wire(args), ctx, caller);
    let state = this.state(ref);
    for (const fact of decision.facts ?? []) {
      const stored = wire(fact);
      if (!this.journals.has(id)) this.journals.set(id, []);
      this.journals.get(id)!.push(stored);
      state = behavior.apply(state, stored, ref);
    }
    this.states.set(id, state);
    for (const out of decision.events ?? []) this.events.push({ from: ref, out: wire(out) });
    for (const n of decision.notices ?? []) this.notices.push(wire(n));
    return wire(decision.reply ?? null);
  }

  /** Replay every journal, and round-trip every snapshot: both must equal the live state. */
  checkReplay(): void {
    for (const [id, ref] of this.refs) {
      const behavior = behaviorOf(ref);
      let replayed = behavior.initial(ref);
      for (const fact of this.journals.get(id) ?? []) replayed = behavior.apply(replayed, fact, ref);
      const live = behavior.toSnapshot(this.state(ref));
      assert.equal(behavior.toSnapshot(replayed), live, `replay of ${id}`);
      assert.equal(behavior.toSnapshot(behavior.fromSnapshot(live, ref)), live, `snapshot of ${id}`);
    }
  }

  eventsOfType(type: string): OutEvent[] {
    return this.events.filter((e) => e.out.event.type === type).map((e) => e.out);
  }
}

async function rejects(
  p: Promise<unknown>,
  msg: string,
  code = "BAD_REQUEST",
  status = 400,
): Promise<ZulipError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ZulipError, `expected a ZulipError, got ${String(err)}`);
    assert.equal(err.message, msg);
    assert.equal(err.code, code);
    assert.equal(err.status, status);
    return err;
  }
  assert.fail(`expected error "${msg}"`);
}

interface World {
  rt: FakeRuntime;
  realmId: number;
  owner: { userId: number; apiKey: string; caller: Caller };
  /** Create a user through the CLI path (no caller) with a role. */
  addUser(
    email: string,
    role?: number,
    fullName?: string,
  ): Promise<{ userId: number; apiKey: string; caller: Caller }>;
}

const OWNER_EMAIL = "Owner@Example.com";
const OWNER_PASSWORD = "owner-password";

async function world(): Promise<World> {
  const rt = new FakeRuntime();
  const r = (await rt.call(realmDirectoryRef(), "bootstrap", {
    realmName: "Test Org",
    host: "chat.example.com",
    ownerEmail: OWNER_EMAIL,
    ownerPassword: OWNER_PASSWORD,
    ownerName: "Olivia Owner",
  })) as { realmId: number; userId: number; apiKey: string; created: boolean };
  assert.equal(r.created, true);
  const realmId = r.realmId;
  const owner = {
    userId: r.userId,
    apiKey: r.apiKey,
    caller: { realmId, userId: r.userId, role: 100, isBot: false },
  };
  return {
    rt,
    realmId,
    owner,
    async addUser(email, role = 400, fullName = "Some User") {
      const u = (await rt.call(realmRef(realmId), "createUser", {
        email,
        password: "pass-word-1",
        fullName,
        role,
      })) as { userId: number; apiKey: string };
      return { ...u, caller: { realmId, userId: u.userId, role, isBot: false } };
    },
  };
}

function user(w: World, userId: number): UserState {
  return w.rt.state<UserState>(userRef(w.realmId, userId));
}

// ---- emoji --------------------------------------------------------------------

describe("emoji - names and codes", () => {
  test("codes are Zulip's unqualified lowercase hex", () => {
    assert.equal(unicodeCodeForName("heart"), "2764");
    assert.equal(unicodeCodeForName("+1"), "1f44d");
    assert.equal(unicodeCodeForName("thumbs_up"), "1f44d");
    assert.equal(unicodeCodeForName("like"), "1f44d");
    assert.equal(unicodeCodeForName("-1"), "1f44e");
    assert.equal(unicodeCodeForName("hash"), "0023-20e3");
    assert.equal(unicodeCodeForName("flag-us"), "1f1fa-1f1f8");
  });

  test("Zulip's canonical names win over the package's", () => {
    assert.equal(unicodeNameForCode("1f44d"), "+1");
    assert.equal(unicodeNameForCode("263a"), "smile");
    assert.equal(unicodeCodeForName("smile"), "263a");
    assert.equal(unicodeNameForCode("1f604"), "big_smile");
    assert.equal(unicodeCodeForName("working_on_it"), "1f6e0");
    assert.equal(unicodeNameForCode("1f60a"), "blush");
  });

  test("check_emoji_request texts", () => {
    assert.doesNotThrow(() => checkEmojiRequest("heart", "2764", "unicode_emoji", {}));
    assert.throws(
      () => checkEmojiRequest("heart", "ffff", "unicode_emoji", {}),
      /^ZulipError: Invalid emoji code\.$/,
    );
    assert.throws(() => checkEmojiRequest("smile", "2764", "unicode_emoji", {}), /Invalid emoji name\./);
    assert.throws(() => checkEmojiRequest("x", "1", "realm_emoji", {}), /Invalid custom emoji\./);
    assert.throws(
      () => checkEmojiRequest("x", "1", "realm_emoji", { "1": { id: "1", name: "y", deactivated: false } }),
      /Invalid custom emoji name\./,
    );
    assert.throws(
      () => checkEmojiRequest("y", "1", "realm_emoji", { "1": { id: "1", name: "y", deactivated: true } }),
      /This custom emoji has been deactivated\./,
    );
    assert.doesNotThrow(() => checkEmojiRequest("zulip", "zulip", "zulip_extra_emoji", {}));
    assert.throws(() => checkEmojiRequest("zulip", "zap", "zulip_extra_emoji", {}), /Invalid emoji code\./);
    assert.throws(() => checkEmojiRequest("heart", "2764", "bogus", {}), /Invalid emoji type\./);
    assert.deepEqual(emojiDataForName("zulip", {}), {
      emojiCode: "zulip",
      reactionType: "zulip_extra_emoji",
    });
    assert.throws(() => emojiDataForName("no_such_emoji", {}), /Emoji 'no_such_emoji' does not exist/);
  });
});

// ---- validation helpers ---------------------------------------------------------

describe("users - name and email rules", () => {
  test("check_full_name", () => {
    assert.equal(checkFullName("  Ada Lovelace "), "Ada Lovelace");
    assert.throws(() => checkFullName("a"), /Name too short!/);
    assert.throws(() => checkFullName("x".repeat(101)), /Name too long!/);
    assert.equal(checkFullName("😀".repeat(100)), "😀".repeat(100)); // code points, not UTF-16 units
    assert.throws(() => checkFullName("Bad *name"), /Invalid characters in name!/);
    assert.throws(() => checkFullName("Bad\u0007name"), /Invalid characters in name!/);
    assert.throws(() => checkFullName("Name|15"), /Invalid format!/);
  });

  test("Django-like email validation", () => {
    for (const ok of ["a@example.com", "a.b+c@sub.example.org", "x@localhost", "u@[127.0.0.1]"]) {
      assert.ok(isValidEmail(ok), ok);
    }
    for (const bad of [
      "",
      "plain",
      "@example.com",
      "a@",
      "a b@example.com",
      "a@example",
      "a..b@example.com",
    ]) {
      assert.ok(!isValidEmail(bad), bad);
    }
  });
});

// ---- directory -------------------------------------------------------------------

describe("realm directory - hosts and bootstrap", () => {
  test("no realm: resolveHost is 404 NONEXISTENT_SUBDOMAIN", async () => {
    const rt = new FakeRuntime();
    await rejects(
      rt.call(realmDirectoryRef(), "resolveHost", { host: "x.example.com" }),
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
      404,
    );
  });

  test("bootstrap is idempotent; resolveHost falls back to the only realm when told to", async () => {
    const w = await world();
    assert.deepEqual(await w.rt.call(realmDirectoryRef(), "resolveHost", { host: "CHAT.example.com" }), {
      realmId: w.realmId,
    });
    await rejects(
      w.rt.call(realmDirectoryRef(), "resolveHost", { host: "other.example.com" }),
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
      404,
    );
    assert.deepEqual(
      await w.rt.call(realmDirectoryRef(), "resolveHost", { host: "other.example.com", single: true }),
      { realmId: w.realmId },
    );
    const again = await w.rt.call(realmDirectoryRef(), "bootstrap", {
      realmName: "Another",
      host: "x.example.com",
      ownerEmail: OWNER_EMAIL.toLowerCase(),
      ownerPassword: "whatever",
      ownerName: "Someone",
    });
    assert.deepEqual(again, {
      realmId: w.realmId,
      userId: w.owner.userId,
      apiKey: w.owner.apiKey,
      created: false,
    });
    assert.deepEqual(await w.rt.call(realmDirectoryRef(), "listRealms", {}), [
      { realmId: w.realmId, host: "chat.example.com" },
    ]);
    w.rt.checkReplay();
  });

  test("createRealm makes a second realm with its own ids; hosts are unique", async () => {
    const w = await world();
    const r = await w.rt.call(realmDirectoryRef(), "createRealm", {
      realmName: "Second",
      host: "two.example.com",
      ownerEmail: "boss@two.example.com",
      ownerPassword: "boss-password",
      ownerName: "Boss Two",
    });
    assert.notEqual(r.realmId, w.realmId);
    assert.equal(r.userId, 1); // user ids are per realm
    assert.deepEqual(await w.rt.call(realmDirectoryRef(), "resolveHost", { host: "two.example.com" }), {
      realmId: r.realmId,
    });
    // Two organizations: no host falls back to either, whatever the gateway says.
    await rejects(
      w.rt.call(realmDirectoryRef(), "resolveHost", { host: "other.example.com", single: true }),
      "Invalid subdomain",
      "NONEXISTENT_SUBDOMAIN",
      404,
    );
    await rejects(
      w.rt.call(realmDirectoryRef(), "createRealm", {
        realmName: "Third",
        host: "two.example.com",
        ownerEmail: "c@example.com",
        ownerPassword: "boss-password",
        ownerName: "Boss Three",
      }),
      "Host 'two.example.com' is already used by another organization",
    );
    await rejects(
      w.rt.call(realmDirectoryRef(), "registerRealm", { realmId: 99, host: "two.example.com" }),
      "Host 'two.example.com' is already used by another organization",
    );
    w.rt.checkReplay();
  });

  test("end-user callers cannot reach internal methods", async () => {
    const w = await world();
    await rejects(
      w.rt.call(
        realmDirectoryRef(),
        "bootstrap",
        {
          realmName: "X",
          host: "x.example.com",
          ownerEmail: "x@example.com",
          ownerPassword: "x",
          ownerName: "X",
        },
        w.owner.caller,
      ),
      "Access denied",
      "BAD_REQUEST",
      403,
    );
    await rejects(
      w.rt.call(realmRef(w.realmId), "apiKey", { email: OWNER_EMAIL }, w.owner.caller),
      "Access denied",
      "BAD_REQUEST",
      403,
    );
  });
});

// ---- realm: users and auth ----------------------------------------------------------

describe("realm - user directory and creation", () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });

  test("authVerify is case-insensitive, never answers a key, and null for strangers and wrong keys", async () => {
    const verify = (email: string, apiKey: string) =>
      w.rt.call(realmRef(w.realmId), "authVerify", { email, apiKey });
    const rec = await verify("OWNER@example.COM", w.owner.apiKey);
    assert.deepEqual(rec, {
      userId: w.owner.userId,
      role: 100,
      isBot: false,
      botType: null,
      isActive: true,
      realmDeactivated: false,
    });
    assert.match(w.owner.apiKey, /^[A-Za-z0-9]{32}$/);
    assert.equal(await verify("nobody@example.com", w.owner.apiKey), null);
    assert.equal(await verify(OWNER_EMAIL, "x".repeat(32)), null);
    assert.equal(await verify(OWNER_EMAIL, w.owner.apiKey.slice(1)), null);
  });

  test("the password is stored as an scrypt hash only", async () => {
    const u = user(w, w.owner.userId);
    assert.match(u.passwordHash!, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    assert.ok(!JSON.stringify(w.rt.states.get(`realm/${w.realmId}/realm`)).includes(OWNER_PASSWORD));
    assert.ok(!u.passwordHash!.includes(OWNER_PASSWORD));
  });

  test("an administrator creates a member: reply, realm_user add to everyone, notice", async () => {
    w.rt.events = [];
    const reply = await w.rt.call(
      realmRef(w.realmId),
      "createUser",
      { email: "Hamlet@Example.com", password: "hamlet-pw", fullName: "  King Hamlet " },
      w.owner.caller,
    );
    const userId = (reply as { user_id: number }).user_id;
    assert.deepEqual(reply, { user_id: userId });
    const [add] = w.rt.eventsOfType("realm_user");
    // Every active user with a queue (the router resolves `everyone`), and the new user.
    assert.deepEqual([add!.userIds, add!.everyone, add!.except], [[userId], true, undefined]);
    const person = add!.event.person as Obj;
    assert.equal(add!.event.op, "add");
    assert.equal(person.user_id, userId);
    assert.equal(person.full_name, "King Hamlet");
    assert.equal(person.email, "Hamlet@Example.com");
    assert.equal(person.role, 400);
    assert.equal(person.date_joined, "2024-01-02T03:04+00:00");
    assert.deepEqual(w.rt.notices.at(-1), {
      subject: "auth.invalidate",
      data: { realmId: w.realmId, email: "hamlet@example.com" },
    });
    w.rt.checkReplay();
  });

  test("create_user_backend errors, in Zulip's order", async () => {
    const realm = realmRef(w.realmId);
    const member = await w.addUser("member@example.com");
    const ok = { email: "new@example.com", password: "new-password", fullName: "New Person" };
    await rejects(
      w.rt.call(realm, "createUser", ok, member.caller),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, fullName: "x" }, w.owner.caller),
      "Name too short!",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, fullName: "x".repeat(101) }, w.owner.caller),
      "Name too long!",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, fullName: "a@b" }, w.owner.caller),
      "Invalid characters in name!",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, email: "not-an-email" }, w.owner.caller),
      "Bad name or username",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, email: "MEMBER@example.com" }, w.owner.caller),
      "Email 'MEMBER@example.com' already in use",
    );
    await rejects(
      w.rt.call(realm, "createUser", { ...ok, password: "12345" }, w.owner.caller),
      "The password is too weak.",
    );
    // Nothing was created by the failures.
    assert.equal(await w.rt.call(realm, "apiKey", { email: "new@example.com" }), null);
  });

  test("an administrator without can_create_users is refused", async () => {
    // An admin whose directory entry lacks the permission (e.g. promoted later).
    const realm = w.rt.state<RealmState>(realmRef(w.realmId));
    realm.users["admin@example.com"] = {
      userId: 77,
      email: "admin@example.com",
      apiKey: "k".repeat(32),
      role: 200,
      isBot: false,
      botType: null,
      isActive: true,
      canCreateUsers: false,
      fullName: "Ad Min",
      dateJoined: 0,
      timezone: "",
      avatarVersion: 1,
      botOwnerId: null,
      emailVisibility: 1,
    };
    realm.emailById["77"] = "admin@example.com";
    await rejects(
      w.rt.call(
        realmRef(w.realmId),
        "createUser",
        { email: "x@example.com", password: "password-1", fullName: "X Person" },
        { realmId: w.realmId, userId: 77, role: 200, isBot: false },
      ),
      "User not authorized to create users",
    );
  });

  test("a retried user create is a no-op with the same answer", async () => {
    const m = await w.addUser("again@example.com");
    const ref = userRef(w.realmId, m.userId);
    const journal = w.rt.journals.get(`user/${w.realmId}/${m.userId}`)!.length;
    const again = await w.rt.call(ref, "create", {
      email: "AGAIN@example.com",
      password: "other",
      fullName: "Other",
      apiKey: "z".repeat(32),
    });
    assert.equal(again.userId, m.userId);
    assert.equal(again.apiKey, m.apiKey);
    assert.equal(w.rt.journals.get(`user/${w.realmId}/${m.userId}`)!.length, journal);
  });
});

describe("realm - fetch_api_key flow and its rate limit", () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });

  async function fetchKey(username: string, password: string): Promise<Value> {
    const found = await w.rt.call(realmRef(w.realmId), "login", { username, emptyPassword: password === "" });
    return w.rt.call(userRef(w.realmId, found.userId), "login", { password });
  }

  test("success returns the key, the delivery email and the id", async () => {
    assert.deepEqual(await fetchKey("owner@EXAMPLE.com", OWNER_PASSWORD), {
      api_key: w.owner.apiKey,
      email: OWNER_EMAIL,
      user_id: w.owner.userId,
    });
  });

  test("failures", async () => {
    await rejects(
      fetchKey("owner@example.com", "wrong"),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    await rejects(
      fetchKey("owner@example.com", ""),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    await rejects(
      fetchKey("ghost@example.com", "x"),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    await rejects(fetchKey("not an email", "x"), "Enter a valid email address.");
  });

  test("deactivated user and realm", async () => {
    const realm = w.rt.state<RealmState>(realmRef(w.realmId));
    realm.users["owner@example.com"]!.isActive = false;
    await rejects(
      fetchKey("owner@example.com", OWNER_PASSWORD),
      "Account is deactivated",
      "USER_DEACTIVATED",
      401,
    );
    realm.users["owner@example.com"]!.isActive = true;
    realm.deactivated = true;
    await rejects(
      fetchKey("owner@example.com", OWNER_PASSWORD),
      "This organization has been deactivated",
      "REALM_DEACTIVATED",
      401,
    );
  });

  test("5 attempts per 30 minutes per username; success clears; the window slides", async () => {
    for (let i = 0; i < 4; i++)
      await rejects(
        fetchKey("owner@example.com", "bad"),
        "Your username or password is incorrect",
        "AUTHENTICATION_FAILED",
        401,
      );
    // The 5th attempt is still allowed, and a success clears the record.
    await fetchKey("owner@example.com", OWNER_PASSWORD);
    for (let i = 0; i < 5; i++) {
      w.rt.clock += 1000;
      await rejects(
        fetchKey("Owner@example.com", "bad"),
        "Your username or password is incorrect",
        "AUTHENTICATION_FAILED",
        401,
      );
    }
    const err = await rejects(
      fetchKey("owner@example.com", OWNER_PASSWORD),
      "API usage exceeded rate limit",
      "RATE_LIMIT_HIT",
      429,
    );
    const retry = err.extra["retry-after"] as number;
    assert.equal(retry, (30 * 60 * 1000 - 4000) / 1000);
    assert.equal(err.headers["Retry-After"], String(retry));
    // Other usernames are not affected.
    await rejects(
      fetchKey("ghost@example.com", "x"),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    // Once the oldest attempt leaves the window, one more attempt is allowed.
    w.rt.clock += retry * 1000 + 1;
    assert.equal(((await fetchKey("owner@example.com", OWNER_PASSWORD)) as Obj).user_id, w.owner.userId);
  });

  test("the counter is memory only: not in snapshots", async () => {
    await rejects(
      fetchKey("owner@example.com", "bad"),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
    const ref = realmRef(w.realmId);
    const snap = behaviors.realm!.toSnapshot(w.rt.state(ref));
    assert.ok(!snap.includes("attempts"));
    const restored = behaviors.realm!.fromSnapshot(snap, ref) as RealmState;
    assert.equal(restored.attempts.size, 0);
  });
});

// ---- user: profile --------------------------------------------------------------

describe("user - profile", () => {
  test("GET /users/me shape", async () => {
    const w = await world();
    const me = await w.rt.call(userRef(w.realmId, w.owner.userId), "profile", {}, w.owner.caller);
    assert.deepEqual(me, {
      email: OWNER_EMAIL,
      user_id: w.owner.userId,
      avatar_version: 1,
      is_admin: true,
      is_owner: true,
      is_guest: false,
      role: 100,
      is_bot: false,
      full_name: "Olivia Owner",
      timezone: "",
      is_active: true,
      date_joined: "2024-01-02T03:04+00:00",
      delivery_email: OWNER_EMAIL,
      avatar_url: "https://secure.gravatar.com/avatar/4cb1f144288e5d61695b0d3f9c63835c?d=identicon&version=1",
      is_imported_stub: false,
      profile_data: {},
    });
    await rejects(w.rt.call(userRef(w.realmId, 999), "profile", {}), "No such user");
  });
});

// ---- user: settings -------------------------------------------------------------------

describe("user - PATCH /settings", () => {
  let w: World;
  let member: Awaited<ReturnType<World["addUser"]>>;
  beforeEach(async () => {
    w = await world();
    member = await w.addUser("member@example.com", 400, "Mem Ber");
    w.rt.events = [];
  });

  const patch = (who: { userId: number; caller: Caller }, args: Obj) =>
    w.rt.call(userRef(w.realmId, who.userId), "updateSettings", args, who.caller);

  test("changed values are saved and evented to the user only; unchanged ones are not", async () => {
    assert.deepEqual(
      await patch(member, { color_scheme: 2, enter_sends: false, default_language: "de" }),
      {},
    );
    const events = w.rt.eventsOfType("user_settings");
    assert.deepEqual(
      events.map((e) => e.event),
      [
        { type: "user_settings", op: "update", property: "color_scheme", value: 2 },
        {
          type: "user_settings",
          op: "update",
          property: "default_language",
          value: "de",
          language_name: "Deutsch",
        },
      ],
    );
    for (const e of events) assert.deepEqual(e.userIds, [member.userId]);
    const journal = w.rt.journals.get(`user/${w.realmId}/${member.userId}`)!.length;
    await patch(member, { color_scheme: 2 });
    assert.equal(w.rt.journals.get(`user/${w.realmId}/${member.userId}`)!.length, journal);
    const settings = await w.rt.call(userRef(w.realmId, member.userId), "userSettings", {});
    assert.equal(settings.color_scheme, 2);
    assert.equal(settings.web_home_view, "inbox");
    w.rt.checkReplay();
  });

  test("bad values: Zulip's texts, and nothing changes", async () => {
    const cases: [Obj, string][] = [
      [{ color_scheme: 4 }, "Invalid color_scheme"],
      [{ web_channel_default_view: 0 }, "Invalid web_channel_default_view"],
      [{ demote_inactive_streams: 5 }, "Invalid demote_inactive_streams"],
      [{ user_list_style: 9 }, "Invalid user_list_style"],
      [{ web_stream_unreads_count_display_policy: 4 }, "Invalid web_stream_unreads_count_display_policy"],
      [{ web_home_view: "home" }, "Invalid web_home_view"],
      [{ emojiset: "apple" }, "Invalid emojiset"],
      [{ web_animate_image_previews: "sometimes" }, "Invalid web_animate_image_previews"],
      [{ default_language: "xx" }, "Invalid default_language"],
      [{ notification_sound: "bogus" }, "Invalid notification sound 'bogus'"],
      [{ email_notifications_batching_period_seconds: 0 }, "Invalid email batching period: 0 seconds"],
      [
        { email_notifications_batching_period_seconds: 604801 },
        "Invalid email batching period: 604801 seconds",
      ],
      [{ timezone: "Mars/Olympus" }, "Invalid timezone: Not a recognized time zone"],
      [{ web_font_size_px: -1 }, "web_font_size_px is too small"],
      [{ enter_sends: "yes" }, "enter_sends is not a boolean"],
      [{ color_scheme: "2" }, "color_scheme is not an integer"],
      [{ color_scheme: 2, emojiset: "apple" }, "Invalid emojiset"],
    ];
    for (const [args, msg] of cases) await rejects(patch(member, args), msg);
    assert.equal(w.rt.journals.get(`user/${w.realmId}/${member.userId}`)!.length, 1);
    assert.equal(w.rt.events.length, 0);
  });

  test("notification_sound 'none' and real sounds are accepted; timezone aliases too", async () => {
    await patch(member, { notification_sound: "none" });
    await patch(member, { notification_sound: "ding" });
    await patch(member, { timezone: "US/Eastern" });
    await patch(member, { timezone: "" });
    await patch(member, { timezone: "UTC" });
    assert.equal(user(w, member.userId).timezone, "UTC");
  });

  test("timezone: user_settings to the user, realm_user update to everyone", async () => {
    await patch(member, { timezone: "Europe/Paris" });
    assert.deepEqual(w.rt.eventsOfType("user_settings"), [
      {
        event: { type: "user_settings", op: "update", property: "timezone", value: "Europe/Paris" },
        userIds: [member.userId],
      },
    ]);
    const [ru] = w.rt.eventsOfType("realm_user");
    assert.deepEqual(ru!.event, {
      type: "realm_user",
      op: "update",
      person: { user_id: member.userId, timezone: "Europe/Paris", email: "member@example.com" },
    });
    assert.deepEqual([ru!.userIds, ru!.everyone], [[], true]);
    w.rt.checkReplay();
  });

  test("full_name: stripped, checked, realm_user update to everyone", async () => {
    await patch(member, { full_name: "  Hamlet Prince " });
    assert.equal(user(w, member.userId).fullName, "Hamlet Prince");
    const [ru] = w.rt.eventsOfType("realm_user");
    assert.deepEqual(ru!.event.person, { user_id: member.userId, full_name: "Hamlet Prince" });
    await rejects(patch(member, { full_name: "H" }), "Name too short!");
    await rejects(patch(member, { full_name: "Ham>let" }), "Invalid characters in name!");
    assert.equal(user(w, member.userId).fullName, "Hamlet Prince");
  });

  test("email: checked like Zulip, but never changed without confirmation", async () => {
    assert.deepEqual(await patch(member, { email: "new-address@example.com" }), {});
    assert.equal(user(w, member.userId).email, "member@example.com");
    await rejects(patch(member, { email: "nope" }), "Invalid address.");
    await rejects(patch(member, { email: "owner@example.com" }), "Already has an account.");
    // The same address (case kept) is no change at all.
    assert.deepEqual(await patch(member, { email: "member@example.com" }), {});
  });

  test("passwords: old password required and checked, strength, then login works", async () => {
    await rejects(patch(member, { new_password: "brand-new-pw" }), "Wrong password!");
    await rejects(patch(member, { new_password: "brand-new-pw", old_password: "nope" }), "Wrong password!");
    await rejects(
      patch(member, { new_password: "123", old_password: "pass-word-1" }),
      "New password is too weak!",
    );
    assert.deepEqual(await patch(member, { new_password: "brand-new-pw", old_password: "pass-word-1" }), {});
    const found = await w.rt.call(realmRef(w.realmId), "login", { username: "member@example.com" });
    assert.equal(
      (await w.rt.call(userRef(w.realmId, found.userId), "login", { password: "brand-new-pw" })).user_id,
      member.userId,
    );
    await rejects(
      w.rt.call(userRef(w.realmId, found.userId), "login", { password: "pass-word-1" }),
      "Your username or password is incorrect",
      "AUTHENTICATION_FAILED",
      401,
    );
  });

  test("wrong old passwords count against the login rate limit", async () => {
    for (let i = 0; i < 5; i++) {
      await rejects(patch(member, { new_password: "brand-new-pw", old_password: "nope" }), "Wrong password!");
    }
    await rejects(
      patch(member, { new_password: "brand-new-pw", old_password: "pass-word-1" }),
      "You're making too many attempts! Try again in 1800 seconds.",
    );
  });

  test("a user may only change their own settings; bots may not use the endpoint", async () => {
    await rejects(
      w.rt.call(userRef(w.realmId, member.userId), "updateSettings", { color_scheme: 2 }, w.owner.caller),
      "Access denied",
      "BAD_REQUEST",
      403,
    );
    const botRef = userRef(w.realmId, 500);
    await w.rt.call(botRef, "create", {
      email: "bot@example.com",
      fullName: "A Bot",
      isBot: true,
      botType: 1,
      botOwnerId: w.owner.userId,
      apiKey: "b".repeat(32),
    });
    const botCaller = { realmId: w.realmId, userId: 500, role: 400, isBot: true };
    await rejects(
      w.rt.call(botRef, "updateSettings", { color_scheme: 2 }, botCaller),
      "This endpoint does not accept bot requests.",
    );
    const bot = (await w.rt.call(botRef, "profile", {})) as Obj;
    assert.equal(bot.bot_type, 1);
    assert.equal(bot.bot_owner_id, w.owner.userId);
    assert.equal(bot.profile_data, undefined);
  });
});

describe("user - PATCH /settings with target_users", () => {
  let w: World;
  let member: Awaited<ReturnType<World["addUser"]>>;
  let admin: Awaited<ReturnType<World["addUser"]>>;
  beforeEach(async () => {
    w = await world();
    member = await w.addUser("member@example.com");
    admin = await w.addUser("admin@example.com", 200, "Ad Min");
    w.rt.events = [];
  });

  const patch = (who: { userId: number; caller: Caller }, args: Obj) =>
    w.rt.call(userRef(w.realmId, who.userId), "updateSettings", args, who.caller);
  const target = (user_ids: number[], skip = false) => ({ user_ids, skip_if_already_edited: skip });

  test("administrators apply settings to others; events go to each target", async () => {
    assert.deepEqual(
      await patch(admin, { target_users: target([member.userId, admin.userId]), color_scheme: 3 }),
      {},
    );
    assert.equal(user(w, member.userId).settings.color_scheme, 3);
    assert.equal(user(w, admin.userId).settings.color_scheme, 3);
    assert.deepEqual(
      w.rt
        .eventsOfType("user_settings")
        .map((e) => e.userIds[0])
        .sort(),
      [member.userId, admin.userId].sort(),
    );
    w.rt.checkReplay();
  });

  test("skip_if_already_edited skips users who changed the setting themselves", async () => {
    await patch(member, { color_scheme: 2 });
    await patch(admin, { target_users: target([member.userId, w.owner.userId], true), color_scheme: 3 });
    assert.equal(user(w, member.userId).settings.color_scheme, 2);
    assert.equal(user(w, w.owner.userId).settings.color_scheme, 3);
    // Without the flag it applies anyway.
    await patch(admin, { target_users: target([member.userId]), color_scheme: 3 });
    assert.equal(user(w, member.userId).settings.color_scheme, 3);
  });

  test("refusals", async () => {
    await rejects(
      patch(member, { target_users: target([admin.userId]), color_scheme: 3 }),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    const others: Obj[] = [{ email: "x@example.com" }, { new_password: "abcdefgh" }, { timezone: "UTC" }];
    for (const extra of others) {
      await rejects(
        patch(admin, { target_users: target([member.userId]), ...extra }),
        "Cannot change this setting for other users.",
      );
    }
    await rejects(
      patch(admin, { target_users: target([member.userId]), presence_enabled: false }),
      "Cannot change this setting for other users.",
    );
    await rejects(
      patch(admin, { target_users: target([member.userId, 999]), color_scheme: 3 }),
      "Invalid user ID: 999",
    );
    await rejects(
      // Ids 1-8 are the system groups; 4242 names no group.
      patch(admin, { target_users: { group_ids: [4242], skip_if_already_edited: false }, color_scheme: 3 }),
      "Invalid user group ID: 4242",
    );
    await rejects(
      patch(admin, { target_users: { skip_if_already_edited: false }, color_scheme: 3 }),
      "Either user_ids or group_ids must be provided.",
    );
    assert.equal(user(w, member.userId).settings.color_scheme, undefined);
  });

  test("full_name is ignored for others, as in Zulip", async () => {
    await patch(admin, { target_users: target([member.userId]), full_name: "Renamed", enter_sends: true });
    assert.equal(user(w, member.userId).fullName, "Some User");
    assert.equal(user(w, member.userId).settings.enter_sends, true);
  });
});

// ---- user: status ------------------------------------------------------------------

describe("user - POST /users/me/status", () => {
  let w: World;
  let member: Awaited<ReturnType<World["addUser"]>>;
  beforeEach(async () => {
    w = await world();
    member = await w.addUser("member@example.com");
    w.rt.events = [];
  });

  const status = (args: StatusChange) =>
    w.rt.call(userRef(w.realmId, member.userId), "updateStatus", args, member.caller);
  const current = () => w.rt.call(userRef(w.realmId, member.userId), "userStatus", {});

  test("text and emoji by name; event to everyone with the passed fields", async () => {
    assert.deepEqual(await status({ status_text: "  In a meeting ", emoji_name: "calendar" }), {});
    assert.deepEqual(await current(), {
      status_text: "In a meeting",
      emoji_name: "calendar",
      emoji_code: "1f4c5",
      reaction_type: "unicode_emoji",
    });
    const [e] = w.rt.eventsOfType("user_status");
    assert.deepEqual(e!.event, {
      type: "user_status",
      user_id: member.userId,
      status_text: "In a meeting",
      emoji_name: "calendar",
      emoji_code: "1f4c5",
      reaction_type: "unicode_emoji",
    });
    assert.deepEqual([e!.userIds, e!.everyone], [[], true]);
    w.rt.checkReplay();
  });

  test("60 code points allowed, 61 refused", async () => {
    await status({ status_text: "😀".repeat(60) });
    await rejects(status({ status_text: "😀".repeat(61) }), "status_text is too long (limit: 60 characters)");
    await status({ status_text: ` ${"x".repeat(60)} ` }); // stripped first
  });

  test("away is the inverse of presence_enabled", async () => {
    await status({ away: true });
    assert.deepEqual(await current(), { away: true });
    assert.equal(user(w, member.userId).settings.presence_enabled, false);
    const settingsEvents = w.rt.eventsOfType("user_settings");
    assert.deepEqual(settingsEvents[0]!.event, {
      type: "user_settings",
      op: "update",
      property: "presence_enabled",
      value: false,
    });
    assert.deepEqual(w.rt.eventsOfType("user_status")[0]!.event, {
      type: "user_status",
      user_id: member.userId,
      away: true,
    });
    await status({ away: false });
    assert.deepEqual(await current(), {});
  });

  test("emoji_name '' clears the emoji", async () => {
    await status({ emoji_name: "heart" });
    await status({ emoji_name: "" });
    assert.deepEqual(await current(), {});
    assert.equal(user(w, member.userId).status.reactionType, "unicode_emoji");
  });

  test("errors", async () => {
    await rejects(status({}), "Client did not pass any new values.");
    // Zulip checks for new values first: a lone emoji_code is "no new values".
    await rejects(status({ emoji_code: "2764" }), "Client did not pass any new values.");
    await rejects(
      status({ status_text: "x", emoji_code: "2764" }),
      "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
    );
    await rejects(
      status({ status_text: "x", reaction_type: "unicode_emoji" }),
      "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
    );
    await rejects(status({ emoji_name: "no_such_emoji" }), "Emoji 'no_such_emoji' does not exist");
    await rejects(status({ emoji_name: "heart", emoji_code: "ffff" }), "Invalid emoji code.");
    await rejects(status({ emoji_name: "smile", emoji_code: "2764" }), "Invalid emoji name.");
    await rejects(
      status({ emoji_name: "party", emoji_code: "1", reaction_type: "realm_emoji" }),
      "Invalid custom emoji.",
    );
    await rejects(
      status({ emoji_name: "zap", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" }),
      "Invalid emoji name.",
    );
    await rejects(
      status({ emoji_name: "heart", emoji_code: "2764", reaction_type: "other" }),
      "Invalid emoji type.",
    );
    assert.deepEqual(await current(), {});
    assert.equal(w.rt.events.length, 0);
  });

  test("zulip_extra_emoji and explicit codes", async () => {
    await status({ emoji_name: "zulip" });
    assert.deepEqual(await current(), {
      emoji_name: "zulip",
      emoji_code: "zulip",
      reaction_type: "zulip_extra_emoji",
    });
    await status({ emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" });
    assert.equal(user(w, member.userId).status.emojiCode, "1f44d");
  });
});
