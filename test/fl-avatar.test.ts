// Feature levels 466 (avatar source "J", Jdenticon avatars) and 479
// (GET /thumbnail/status/{realm_id_str}/{filename}), black-box over HTTP.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { toPng } from "jdenticon";
import sharp from "sharp";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type ApiHolder,
  type EmbeddedHandle,
  type Ev,
} from "./support/index.ts";
import { getFile, uploadFiles } from "./support/uploads.ts";

const srv = useEmbedded();

/** Upload as `auth`; the path after /user_uploads/ ("<realm>/<..>/<name>"). */
async function upload(
  auth: EmbeddedHandle["owner"] | Awaited<ReturnType<typeof newUser>>,
  data: Buffer,
  name: string,
  type: string,
) {
  const r = await uploadFiles(srv.baseUrl, auth, [{ data, filename: name, type }]);
  assertSuccess(r);
  return (r.body.url as string).slice("/user_uploads/".length);
}

const png = () =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .png()
    .toBuffer();

describe("FL 479: GET /thumbnail/status/{realm_id_str}/{filename}", () => {
  test("FL 479: the owner of an uploaded image learns its thumbnail is ready", async () => {
    const pathId = await upload(srv.owner, await png(), "red.png", "image/png");
    const r = await srv.api("GET", `/thumbnail/status/${pathId}`);
    assertSuccess(r);
    assert.equal(r.body.has_thumbnail, true);
  });

  test("FL 479: not an image, someone else's file, unknown or malformed paths are Invalid attachment", async () => {
    const text = await upload(srv.owner, Buffer.from("hello"), "notes.txt", "text/plain");
    assertError(await srv.api("GET", `/thumbnail/status/${text}`), "Invalid attachment");
    const image = await upload(srv.owner, await png(), "mine.png", "image/png");
    const other = await newUser(srv);
    // Only the owner may ask, even of a file others could see.
    assertError(await srv.api("GET", `/thumbnail/status/${image}`, {}, other), "Invalid attachment");
    const [realm, ...rest] = image.split("/");
    assertError(
      await srv.api("GET", `/thumbnail/status/${realm}/00/${rest.slice(1).join("/")}`),
      "Invalid attachment",
    );
    assertError(
      await srv.api("GET", `/thumbnail/status/${Number(realm) + 1}/${rest.join("/")}`),
      "Invalid attachment",
    );
    assertError(await srv.api("GET", `/thumbnail/status/abc/${rest.join("/")}`), "Invalid attachment");
    assertError(await srv.api("GET", `/thumbnail/status/${realm}/__proto__`), "Invalid attachment");
    assertError(await srv.api("GET", `/thumbnail/status/${realm}/${"x".repeat(5000)}`), "Invalid attachment");
    // Without credentials: Zulip's authentication error.
    const anon = await srv.api("GET", `/thumbnail/status/${image}`, {}, null);
    assert.equal(anon.status, 401);
    // The owner still gets the answer: nothing changed.
    assert.equal((await srv.api("GET", `/thumbnail/status/${image}`)).body.has_thumbnail, true);
  });
});

/** Zulip's Jdenticon options (generate_avatar_jdenticon), as a client would render them. */
const JDENTICON = { padding: 0, lightness: { color: [0.3, 0.7], grayscale: [0.3, 0.7] } };

/**
 * The J flow on a server: with default_avatar_source "J" a new user's
 * avatar is a served Jdenticon of "<realm_uuid>:<user id>", everywhere the
 * avatar shows (user objects, even with client_gravatar; register; the
 * realm_user add event; messages), and users made under "G" keep gravatars.
 */
async function jdenticonFlow(h: ApiHolder & { baseUrl: string }): Promise<void> {
  const before = await newUser(h);
  const q = await openQueue(h, before, ["realm_user"]);
  assertSuccess(await h.api("PATCH", "/realm", { default_avatar_source: "J" }));
  try {
    const j = await newUser(h);
    const reg = await h.api(
      "POST",
      "/register",
      { fetch_event_types: ["realm", "realm_user"], client_gravatar: true },
      j,
    );
    assertSuccess(reg);
    const url = reg.body.avatar_url as string;
    assert.match(url, new RegExp(`^/user_avatars/\\d+/jdenticon/${j.userId}-1\\.png$`));
    assert.equal(reg.body.avatar_source, "J");
    assert.equal(reg.body.avatar_url_medium, url.replace(/\.png$/, "-medium.png"));
    const inList = (reg.body.realm_users as { user_id: number; avatar_url: string | null }[]).find(
      (u) => u.user_id === j.userId,
    );
    assert.equal(inList?.avatar_url, url);
    // A gravatar user's URL stays the client's to compute.
    assert.equal(
      (reg.body.realm_users as { user_id: number; avatar_url: string | null }[]).find(
        (u) => u.user_id === before.userId,
      )?.avatar_url,
      null,
    );
    for (const client_gravatar of [true, false]) {
      const one = await h.api("GET", `/users/${j.userId}`, { client_gravatar });
      assertSuccess(one);
      assert.equal(one.body.user.avatar_url, url);
    }
    const old = await h.api("GET", `/users/${before.userId}`, { client_gravatar: false });
    assert.match(old.body.user.avatar_url as string, /^https:\/\/secure\.gravatar\.com\/avatar\//);
    // The realm_user add event carries the same URL.
    const evs = await eventsUntil(h, q, (e) =>
      e.some((x: Ev) => x.op === "add" && x.person?.user_id === j.userId),
    );
    assert.equal(
      evs.find((x: Ev) => x.op === "add" && x.person?.user_id === j.userId).person.avatar_url,
      url,
    );

    // The served icon: public, cacheable, the one a client renders from realm_uuid.
    const seed = `${reg.body.realm_uuid as string}:${j.userId}`;
    const got = await getFile(h.baseUrl, url, null);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("content-type"), "image/png");
    assert.match(got.headers.get("cache-control") ?? "", /max-age=\d+/);
    assert.ok(got.data.equals(toPng(seed, 100, JDENTICON)));
    const medium = await getFile(h.baseUrl, url.replace(/\.png$/, "-medium.png"), null);
    assert.equal(medium.status, 200);
    const meta = await sharp(medium.data).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["png", 500, 500]);
    assert.ok((await getFile(h.baseUrl, url, null)).data.equals(got.data));

    // Messages show the sender's Jdenticon, client_gravatar or not.
    const sent = await h.api("POST", "/messages", { type: "private", to: [before.userId], content: "hi" }, j);
    assertSuccess(sent);
    for (const client_gravatar of [true, false]) {
      const msgs = await h.api(
        "GET",
        "/messages",
        { anchor: "newest", num_before: 1, num_after: 0, client_gravatar },
        j,
      );
      assertSuccess(msgs);
      const m = (msgs.body.messages as { id: number; avatar_url: string | null }[]).at(-1)!;
      assert.deepEqual([m.id, m.avatar_url], [sent.body.id, url]);
    }
  } finally {
    assertSuccess(await h.api("PATCH", "/realm", { default_avatar_source: "G" }));
  }
  const later = await newUser(h);
  const back = await h.api("GET", `/users/${later.userId}`, { client_gravatar: false });
  assert.match(back.body.user.avatar_url as string, /^https:\/\/secure\.gravatar\.com\/avatar\//);
}

describe("FL 466: avatar source J (Jdenticon)", () => {
  test("FL 466: new users of a J realm get a served Jdenticon avatar", async () => {
    await jdenticonFlow(srv);
  });

  test("FL 466: malformed or other realms' Jdenticon paths are not found", async () => {
    const up = await uploadFiles(srv.baseUrl, srv.owner, [{ data: Buffer.from("x"), filename: "x.txt" }]);
    const realmId = Number((up.body.url as string).split("/")[2]);
    for (const path of [
      `/user_avatars/${realmId}/jdenticon/abc.png`,
      `/user_avatars/${realmId}/jdenticon/5.png`,
      `/user_avatars/${realmId}/jdenticon/5-1.svg`,
      `/user_avatars/${realmId}/jdenticon/5-1-large.png`,
      `/user_avatars/${realmId}/jdenticon/__proto__`,
      `/user_avatars/${realmId}/jdenticon/${"9".repeat(5000)}-1.png`,
      `/user_avatars/${realmId + 1}/jdenticon/5-1.png`,
      `/user_avatars/x/jdenticon/5-1.png`,
    ]) {
      const r = await getFile(srv.baseUrl, path, null);
      assert.equal(r.status, 404, path);
      assert.equal(r.json?.result, "error", path);
    }
  });
});

describe("FL 466 in cluster mode", { skip: requireBinaries("nats-server", "redis-server") }, () => {
  const c = useCluster({ nodes: ["n1", "n2"] });

  test("FL 466: new users of a J realm get a served Jdenticon avatar across nodes", async () => {
    await jdenticonFlow(c);
  });
});
