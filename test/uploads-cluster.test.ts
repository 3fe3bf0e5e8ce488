// Uploads in cluster mode (real nats-server, redis-server and s3rver; two
// nodes and a gateway as processes): the gateway keeps the bytes in the S3
// bucket its environment names, the realm's uploads directory lives on
// whichever node owns its shard, and a DM shares the file with its
// recipient while a third user stays refused.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { requireBinaries, startCluster, type Creds, type TestCluster } from "./support/index.ts";
import { requireS3rver, startS3, type S3Server } from "./support/s3.ts";
import { assertFileError, getFile, uploadFiles } from "./support/uploads.ts";

const skip = requireBinaries("nats-server", "redis-server") ?? requireS3rver();
let c: TestCluster;
let s3: S3Server;

before(async () => {
  if (skip) return;
  s3 = await startS3();
  c = await startCluster({ gatewayEnv: s3.env });
});

after(async () => {
  await c?.stop();
  await s3?.stop();
});

let seq = 0;
async function member(): Promise<Creds & { userId: number }> {
  const email = `up${++seq}@example.com`;
  const password = `pw-${seq}-secret-words`;
  const made = await c.api("POST", "/users", { email, password, full_name: `Up ${seq}` });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const key = await c.api("POST", "/fetch_api_key", { username: email, password }, null);
  assert.equal(key.status, 200, JSON.stringify(key.body));
  return { email, apiKey: key.body.api_key, userId: made.body.user_id };
}

describe("uploads - cluster", { skip }, () => {
  test("upload to S3 through the gateway, share by DM, list and delete", async () => {
    const me = await member();
    const friend = await member();
    const stranger = await member();
    const up = await uploadFiles(c.baseUrl, me, [{ data: Buffer.from("cluster bytes"), filename: "c.txt" }]);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const url = up.body.url as string;
    const pathId = url.slice("/user_uploads/".length);

    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.key, secretAccessKey: s3.secret },
    });
    try {
      const obj = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: pathId }));
      assert.equal(Buffer.from(await obj.Body!.transformToByteArray()).toString(), "cluster bytes");
    } finally {
      client.destroy();
    }

    assertFileError(await getFile(c.baseUrl, url, friend), "You are not authorized to view this file.", 403);
    const sent = await c.api(
      "POST",
      "/messages",
      { type: "direct", to: JSON.stringify([friend.userId]), content: `[c.txt](${url})` },
      me,
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const got = await getFile(c.baseUrl, url, friend);
    assert.equal(got.status, 200);
    assert.equal(got.data.toString(), "cluster bytes");
    assertFileError(
      await getFile(c.baseUrl, url, stranger),
      "You are not authorized to view this file.",
      403,
    );

    const tmp = await c.api("GET", url, {}, friend);
    assert.equal(tmp.status, 200, JSON.stringify(tmp.body));
    assert.equal((await getFile(c.baseUrl, tmp.body.url, null)).data.toString(), "cluster bytes");

    const list = await c.api("GET", "/attachments", {}, me);
    assert.equal(list.status, 200);
    assert.deepEqual(
      // message_ids since feature level 472.
      list.body.attachments.map((a: { name: string; message_ids: number[] }) => [a.name, a.message_ids]),
      [["c.txt", [sent.body.id]]],
    );
    const del = await c.api("DELETE", `/attachments/${list.body.attachments[0].id}`, {}, me);
    assert.equal(del.status, 200, JSON.stringify(del.body));
    assertFileError(await getFile(c.baseUrl, url, me), "File not found.", 404);
  });
});
