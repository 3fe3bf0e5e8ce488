// Deleting messages updates the attachments they linked, black-box: after
// DELETE /messages/{id}, POST /streams/{id}/delete_topic and the bulk
// deletion of DELETE /users/{id} with `actions`, GET /attachments no
// longer lists the deleted messages, the owner's queue gets the
// `attachment` update event, and a file no message links any more stays
// its owner's (listed, deletable). The single delete also in cluster mode
// (nats-server, redis-server, nodes and a gateway as processes).

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import {
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  useCluster,
  useEmbedded,
  type Creds,
  type Ev,
  type Member,
} from "./support/index.ts";
import { uploadFiles } from "./support/uploads.ts";

const srv = useEmbedded();
let member: Member;
let streamId: number;

before(async () => {
  member = await newUser(srv, 400, "Mo Member");
  assertSuccess(
    await srv.api("POST", "/channels/create", {
      name: "files",
      subscribers: JSON.stringify([srv.owner.userId, member.userId]),
    }),
  );
  streamId = (await srv.api("GET", "/get_stream_id", { stream: "files" })).body.stream_id as number;
});

async function upload(who: Creds, name: string): Promise<{ url: string; id: number }> {
  const r = await uploadFiles(srv.baseUrl, who, [{ data: Buffer.from(`bytes of ${name}`), filename: name }]);
  assertSuccess(r);
  const url = r.body.url as string;
  const list = await srv.api("GET", "/attachments", {}, who);
  assertSuccess(list);
  const a = (list.body.attachments as Ev[]).find((x) => url.endsWith(x.path_id as string))!;
  return { url, id: a.id as number };
}

async function send(who: Creds, topic: string, content: string): Promise<number> {
  const r = await srv.api("POST", "/messages", { type: "stream", to: "files", topic, content }, who);
  assertSuccess(r);
  return r.body.id as number;
}

async function linkedIds(who: Creds, attachmentId: number): Promise<number[] | undefined> {
  const list = await srv.api("GET", "/attachments", {}, who);
  assertSuccess(list);
  const a = (list.body.attachments as Ev[]).find((x) => x.id === attachmentId);
  return a ? (a.message_ids as number[]) : undefined;
}

/** The attachment update events the owner's queue gets for this file, after `act`. */
async function updatesAfter(who: Creds, attachmentId: number, act: () => Promise<void>): Promise<Ev[]> {
  const q = await openQueue(srv, who, ["attachment"]);
  await act();
  const evs = await eventsUntil(srv, q, (e) =>
    e.some((x: Ev) => x.op === "update" && x.attachment.id === attachmentId),
  );
  return evs.filter((x: Ev) => x.op === "update" && x.attachment.id === attachmentId);
}

describe("deleting messages updates their attachments", () => {
  test("DELETE /messages/{id}: dropped from the list, update event, the file stays its owner's", async () => {
    const file = await upload(member, "single.txt");
    const first = await send(member, "single", `[a](${file.url})`);
    const second = await send(member, "single", `again [a](${file.url})`);
    assert.deepEqual(await linkedIds(member, file.id), [first, second]);

    const evs = await updatesAfter(member, file.id, async () => {
      assertSuccess(await srv.api("DELETE", `/messages/${first}`, {}, member));
    });
    assert.deepEqual(evs[0]!.attachment.message_ids, [second]);
    assert.equal(typeof evs[0]!.upload_space_used, "number");
    assert.deepEqual(await linkedIds(member, file.id), [second]);

    // An administrator deletes the last message: linked by none, still listed and the owner's.
    await updatesAfter(member, file.id, async () => {
      assertSuccess(await srv.api("DELETE", `/messages/${second}`));
    });
    assert.deepEqual(await linkedIds(member, file.id), []);
    assertSuccess(await srv.api("DELETE", `/attachments/${file.id}`, {}, member));
    assert.equal(await linkedIds(member, file.id), undefined);
  });

  test("delete_topic: every deleted message leaves the file's list", async () => {
    const file = await upload(member, "topic.txt");
    const kept = await send(member, "kept", `[t](${file.url})`);
    await send(member, "doomed", `[t](${file.url})`);
    await send(srv.owner, "doomed", `quoting [t](${file.url})`);
    assert.equal((await linkedIds(member, file.id))!.length, 3);
    await updatesAfter(member, file.id, async () => {
      assertSuccess(await srv.api("POST", `/streams/${streamId}/delete_topic`, { topic_name: "doomed" }));
    });
    assert.deepEqual(await linkedIds(member, file.id), [kept]);
  });

  test("DELETE /users/{id} with delete_public_channel_messages: the deactivated sender's messages leave it", async () => {
    const leaver = await newUser(srv, 400, "Lee Leaver");
    assertSuccess(
      await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: "files" }] }, leaver),
    );
    const file = await upload(leaver, "leaver.txt");
    await send(leaver, "bulk", `[l](${file.url})`);
    const other = await send(srv.owner, "bulk", `[l](${file.url})`);
    assert.equal((await linkedIds(leaver, file.id))!.length, 2);
    assertSuccess(
      await srv.api("DELETE", `/users/${leaver.userId}`, {
        actions: { delete_public_channel_messages: true },
      }),
    );
    // Reactivated, the uploader still owns the file, linked by the other message only.
    assertSuccess(await srv.api("POST", `/users/${leaver.userId}/reactivate`));
    assert.deepEqual(await linkedIds(leaver, file.id), [other]);
  });
});

const skip = requireBinaries("nats-server", "redis-server");

describe("cluster: nats-server, redis-server, two nodes, a gateway", { skip }, () => {
  const c = useCluster();

  test("DELETE /messages/{id} drops the message from its attachment", { skip }, async () => {
    assertSuccess(await c.api("POST", "/channels/create", { name: "cluster files", subscribers: "[]" }));
    const up = await uploadFiles(c.baseUrl, c.owner, [{ data: Buffer.from("cluster"), filename: "c.txt" }]);
    assertSuccess(up);
    const url = up.body.url as string;
    const sent = await c.api("POST", "/messages", {
      type: "stream",
      to: "cluster files",
      topic: "t",
      content: `[c](${url})`,
    });
    assertSuccess(sent);
    const listed = async () => {
      const r = await c.api("GET", "/attachments");
      assertSuccess(r);
      const a = (r.body.attachments as Ev[]).find((x) => url.endsWith(x.path_id as string))!;
      return a.message_ids as number[];
    };
    assert.deepEqual(await listed(), [sent.body.id]);
    assertSuccess(await c.api("DELETE", `/messages/${sent.body.id as number}`));
    assert.deepEqual(await listed(), []);
  });
});
