// The protobuf boundary (proto/codec.ts): journal facts and actor requests
// and replies carry their dynamic part as JSON text, and still read the
// protobuf Value trees that earlier versions wrote (journals on disk, and
// nodes of the previous version while a cluster is upgraded).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Obj } from "../actors/types.ts";
import type { ActorRequest, ActorResponse } from "../cluster/transport/contract.ts";
import {
  decodeFact,
  decodeRequestBatch,
  decodeResponseBatch,
  encodeFact,
  encodeFlatMap,
  fromPbMap,
  encodeRequestBatch,
  encodeResponseBatch,
  fromPbRequest,
  fromPbResponse,
  pb,
  toPbMap,
  toPbRequest,
  toPbResponse,
  toPbValue,
} from "../proto/codec.ts";

const sample: Obj = {
  type: "delivered",
  key: "n.x.1",
  per: { "7:0123456789abcdef": [{ type: "message", flags: [], message: { id: 3, content: "é ✓ 😀" } }] },
  n: -2.5,
  big: 2 ** 40,
  none: null,
  yes: true,
  list: [1, "two", [3], { four: 4 }],
};

const request: ActorRequest = {
  ref: { kind: "channel", realm: 2, key: "5", shardKey: "5" },
  shard: 17,
  method: "getMessages",
  args: sample,
  caller: { realmId: 2, userId: 9, role: 400, isBot: false },
  deadline: 1_800_000_000_000,
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
};

describe("codec: journal facts", () => {
  test("encodeFact writes JSON text that decodeFact reads back", () => {
    const bytes = encodeFact(sample);
    const m = pb().Fact.decode(bytes) as unknown as { json: Uint8Array };
    assert.deepEqual(JSON.parse(Buffer.from(m.json).toString("utf8")), sample);
    assert.deepEqual(decodeFact(bytes), sample);
  });

  test("encodeFact writes what protobufjs writes, at every length-prefix size", () => {
    for (const n of [0, 100, 200, 20_000, 3_000_000]) {
      const fact = { type: "x", text: "é".repeat(n) };
      const mine = encodeFact(fact);
      const theirs = pb()
        .Fact.encode({ json: Buffer.from(JSON.stringify(fact)) })
        .finish();
      assert.deepEqual(Buffer.from(mine), Buffer.from(theirs));
      assert.deepEqual(decodeFact(theirs), fact);
    }
  });

  test("encodeFlatMap writes what protobufjs writes for a notice's map", () => {
    const samples: Obj[] = [
      { realmId: 7, email: "hamlet@example.com" },
      { realmId: 2147483647, email: "*", n: -1, big: -2147483648, ok: true, no: false, none: null },
      { s: "é".repeat(300) },
      {},
      // Not flat: through protobufjs, same bytes.
      { x: 1.5, y: [1, 2], z: { a: 1 }, w: 2 ** 40 },
    ];
    for (const o of samples) {
      const mine = Buffer.from(encodeFlatMap(o));
      assert.deepEqual(mine, Buffer.from(pb().MapValue.encode(toPbMap(o)).finish()));
      assert.deepEqual(
        fromPbMap(pb().MapValue.decode(mine) as unknown as Parameters<typeof fromPbMap>[0]),
        JSON.parse(JSON.stringify(o)),
      );
    }
  });

  test("decodeFact still reads entries written as a Value tree", () => {
    const old = pb()
      .Fact.encode({ fact: toPbMap(sample) })
      .finish();
    assert.deepEqual(decodeFact(old), sample);
  });
});

describe("codec: actor requests and replies", () => {
  test("a request round-trips through a batch with its arguments as JSON", () => {
    const [p] = decodeRequestBatch(encodeRequestBatch([toPbRequest(42, request)]));
    assert.ok(p);
    assert.equal(
      Buffer.from((p as { argsJson: Uint8Array }).argsJson).toString("utf8"),
      JSON.stringify(sample),
    );
    assert.deepEqual(fromPbRequest(p), { corr: 42, req: request });
  });

  test("a request of the previous version (arguments as a Value map) is read", () => {
    const old = { ...toPbRequest(7, request), argsJson: undefined, args: toPbMap(sample) };
    const [p] = decodeRequestBatch(
      pb()
        .RequestBatch.encode({ requests: [old] })
        .finish(),
    );
    assert.deepEqual(fromPbRequest(p!).req.args, sample);
  });

  test("replies round-trip: values as JSON, null and undefined as null, errors as they were", () => {
    const replies: ActorResponse[] = [
      { ok: true, value: sample },
      { ok: true, value: null },
      { ok: true, value: "text" },
      { ok: true, value: [] },
      {
        ok: false,
        kind: "zulip",
        code: "BAD_REQUEST",
        msg: "Invalid channel ID",
        status: 400,
        extra: { stream_id: 5 },
        headers: { "Retry-After": "3" },
      },
    ];
    const decoded = decodeResponseBatch(encodeResponseBatch(replies.map((r, i) => toPbResponse(i, r))));
    assert.deepEqual(
      decoded.map((p) => fromPbResponse(p).res),
      replies,
    );
    const undef = fromPbResponse(
      decodeResponseBatch(
        encodeResponseBatch([toPbResponse(0, { ok: true, value: undefined as never })]),
      )[0]!,
    );
    assert.deepEqual(undef.res, { ok: true, value: null });
  });

  test("a reply's JSON text is kept, parsed on the first read of its value only, and sent on as it is", () => {
    const [p] = decodeResponseBatch(encodeResponseBatch([toPbResponse(4, { ok: true, value: sample })]));
    const res = fromPbResponse(p!).res;
    assert.ok(res.ok);
    assert.equal(Buffer.from(res.json!).toString("utf8"), JSON.stringify(sample));
    const first = res.value;
    assert.deepEqual(first, sample);
    assert.equal(res.value, first, "parsed once");
    // A node that passes the reply on (a forwarded request) sends the same bytes, not a new encoding.
    assert.equal(toPbResponse(4, res).valueJson, res.json);
    const nul = fromPbResponse(
      decodeResponseBatch(encodeResponseBatch([toPbResponse(0, { ok: true, value: null })]))[0]!,
    ).res;
    assert.ok(nul.ok);
    assert.equal(nul.value, null);
    assert.equal(nul.value, null);
  });

  test("a reply of the previous version (value as a Value tree) is read", () => {
    const bytes = pb()
      .ResponseBatch.encode({ responses: [{ corr: 3, value: toPbValue(sample) }] })
      .finish();
    assert.deepEqual(fromPbResponse(decodeResponseBatch(bytes)[0]!), {
      corr: 3,
      res: { ok: true, value: sample },
    });
  });
});
