// The windowed channel fetch (actors/channel: channelWindow, walkWindow) and
// the conversation's topic summaries, checked against the naive algorithms
// they replace: filter every message, then cut the window (windowIds); scan
// every message for a topic's ids and senders. The conversation's messages
// live in a real LMDB store (its writes applied as the catalog applies a
// decision's), with recent windows of several sizes, so reads come from
// memory, the store, or both.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
// The behaviour registry first: the handler modules are part of an import cycle through it.
import "../actors/index.ts";
import {
  channelWindow,
  contentFilter,
  type ChannelWindowArgs,
} from "../actors/channel/conversation-handlers.ts";
import type { Filters } from "../actors/channel/protocol.ts";
import type { FlagSource } from "../actors/channel/received.ts";
import {
  addWrites,
  allIds,
  applyConvFact,
  changeOf,
  convFromSnapshot,
  convIndex,
  convToSnapshot,
  getMsgs,
  initialConv,
  removedFacts,
  removeWrites,
  setIdTail,
  setRecentWindow,
  type ConvState,
  type Msg,
  type Reader,
} from "../actors/channel/conversation-state.ts";
import { createLmdbStore } from "../cluster/storage/lmdb-store.ts";
import type { RecordWrite } from "../cluster/storage/contract.ts";
import { storedMessage } from "./support/fixtures.ts";
import { LARGER_THAN_MAX_MESSAGE_ID, firstUnreadAnchor, windowIds } from "../actors/channel/window.ts";
import type { ActorRef, Obj } from "../actors/types.ts";

const REF: ActorRef = { kind: "channel", realm: 1, key: "7" } as ActorRef;
const dir = mkdtempSync(join(tmpdir(), "chanwin-"));
const store = createLmdbStore(dir);
const epoch = (await store.acquireLease(0, "t", 3_600_000))!;
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
let convN = 0;
const reader: Reader = {
  getRecords: (keys) => store.getRecords(0, keys),
  rangeIndex: (index, r) => store.rangeIndex(0, index, r),
};
const WINDOWS = [0, 1, 3, 200];
/** Id tail sizes (ConvState.tail): none, smaller and larger than the recent windows. */
const TAILS = [0, 1, 4, 1000];

/** Every id of the conversation, read from the store itself (no window, no tail). */
async function storedIds(state: ConvState): Promise<number[]> {
  return store.rangeIndex(0, convIndex(state), { limit: 1_000_000 });
}
const TOPICS = ["alpha", "Alpha", "beta", "", "gamma"];
const WORDS = ["hello", "world", "link", "image"];

function msg(id: number, topic: string, senderId: number, content: string): Msg {
  return storedMessage(id, { topic, senderId, content, timestamp: 1 });
}

const arbMsg = fc.record({
  gap: fc.integer({ min: 1, max: 3 }),
  topic: fc.constantFrom(...TOPICS),
  sender: fc.integer({ min: 1, max: 3 }),
  word: fc.constantFrom(...WORDS),
  own: fc.option(fc.subarray(["read", "starred", "mentioned"]), { nil: undefined }),
});

/** Later facts on the built conversation: topic changes and removals, by position. */
const arbChange = fc.record({
  at: fc.nat(),
  op: fc.constantFrom("topic", "remove"),
  topic: fc.constantFrom(...TOPICS),
});

/** Apply a fact and its writes, as the catalog does with a decision. */
async function commit(state: ConvState, facts: Obj[], writes: RecordWrite[]): Promise<void> {
  for (const f of facts) applyConvFact(state, f);
  await store.append(0, epoch, "t", 0, [], writes);
}

async function build(
  specs: { gap: number; topic: string; sender: number; word: string; own: string[] | undefined }[],
  changes: { at: number; op: string; topic: string }[],
  window: number,
  tail: number,
): Promise<{ state: ConvState; own: Record<string, string[]> }> {
  setRecentWindow(window);
  setIdTail(tail);
  // A fresh conversation key per build: the store is shared.
  const state = initialConv({ ...REF, key: String(++convN) });
  const own: Record<string, string[]> = {};
  let id = 0;
  const facts: Obj[] = [];
  for (const s of specs) {
    id += s.gap;
    facts.push({ type: "msgAdded", msg: msg(id, s.topic, s.sender, s.word), stored: true } as unknown as Obj);
    if (s.own) own[String(id)] = s.own;
  }
  // Out-of-order commits: apply the adds in a shuffled but deterministic order.
  facts.sort((a, b) => (((a.msg as Obj).id as number) % 3) - (((b.msg as Obj).id as number) % 3));
  for (const [i, f] of facts.entries()) {
    // Halfway, a read of the whole conversation: the id tail is read then
    // and follows the later adds (and drops its oldest ids past 2 × TAIL).
    if (i === facts.length >> 1) await allIds(reader, state, null);
    await commit(state, [f], addWrites(state, [f.msg as unknown as Msg]));
  }
  for (const c of changes) {
    const ids = await allIds(reader, state, null);
    if (!ids.length) break;
    const target = (await getMsgs(reader, state, [ids[c.at % ids.length]!]))[0]!;
    if (c.op === "topic") {
      const ch = changeOf(state, target, { topic: c.topic });
      await commit(state, [ch.fact], ch.writes);
    } else await commit(state, removedFacts([target]), removeWrites(state, [target]));
  }
  // A stale flag entry (message gone from the conversation) must change nothing.
  own[String(id + 100)] = ["starred"];
  return { state, own };
}

/** The fetch as it was: every message through the filters, then windowIds. */
async function naive(state: ConvState, own: Record<string, string[]>, a: ChannelWindowArgs) {
  let hidden = false;
  const cands: { id: number; flags: string[] }[] = [];
  const ids = await storedIds(state);
  const msgs = await getMsgs(reader, state, ids);
  for (const [i, id] of ids.entries()) {
    const m = msgs[i]!;
    let flags = own[String(id)];
    if (!flags) {
      if (a.protectedHistory) {
        hidden = true;
        continue;
      }
      if (a.filters.noHistory) continue;
      flags = ["read", "historical"];
    }
    const flagOk = (a.filters.is ?? []).every((t) => {
      const has = t.flag === "unread" ? !flags.includes("read") : flags.includes(t.flag);
      return has !== t.negated;
    });
    if (!contentFilter(m, a.filters) || !flagOk) continue;
    cands.push({ id, flags });
  }
  const anchor =
    a.anchor === "first_unread"
      ? firstUnreadAnchor(cands.map((x) => ({ id: x.id, unread: !x.flags.includes("read") })))
      : a.anchor;
  const w = windowIds(
    cands.map((x) => x.id),
    { anchor, numBefore: a.numBefore, numAfter: a.numAfter, includeAnchor: a.includeAnchor },
  );
  const byId = new Map(cands.map((x) => [x.id, x.flags]));
  return {
    anchor,
    items: w.ids.map((id) => ({ id, flags: byId.get(id)! })),
    found_anchor: w.found_anchor,
    found_oldest: w.found_oldest,
    found_newest: w.found_newest,
    history_limited: hidden && w.found_oldest,
  };
}

function fakeFlags(own: Record<string, string[]>, log: number[][]): FlagSource {
  return async (q) => {
    const out: Record<string, string[]> = {};
    if ("ids" in q) {
      log.push(q.ids);
      for (const id of q.ids) if (own[String(id)]) out[String(id)] = own[String(id)]!;
    } else {
      for (const [id, f] of Object.entries(own)) if (!("unread" in q) || !f.includes("read")) out[id] = f;
    }
    return out;
  };
}

const arbTerm = <T>(value: fc.Arbitrary<T>) => fc.record({ value, negated: fc.boolean() });

const arbFilters: fc.Arbitrary<Filters> = fc.record(
  {
    topics: fc.array(arbTerm(fc.constantFrom(...TOPICS, "ALPHA", "nope")), { maxLength: 2 }),
    senders: fc.array(arbTerm(fc.integer({ min: 1, max: 4 })), { maxLength: 2 }),
    search: fc.constantFrom("hello", "wor", "alpha"),
    is: fc.array(
      fc.record({ flag: fc.constantFrom("read", "unread", "starred", "mentioned"), negated: fc.boolean() }),
      { maxLength: 2 },
    ),
    noHistory: fc.boolean(),
  },
  { requiredKeys: [] },
);

test("channelWindow equals the naive full scan for random messages, anchors, windows and narrows", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbMsg, { maxLength: 60 }),
      fc.array(arbChange, { maxLength: 6 }),
      fc.oneof(
        fc.constant<"first_unread">("first_unread"),
        fc.constant(0),
        fc.constant(LARGER_THAN_MAX_MESSAGE_ID),
        fc.integer({ min: 0, max: 200 }),
      ),
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 0, max: 12 }),
      fc.boolean(),
      arbFilters,
      fc.boolean(),
      fc.constantFrom(...WINDOWS),
      fc.constantFrom(...TAILS),
      async (
        specs,
        changes,
        anchor,
        numBefore,
        numAfter,
        includeAnchor,
        filters,
        protectedHistory,
        window,
        tail,
      ) => {
        const { state, own } = await build(specs, changes, window, tail);
        const args = { anchor, numBefore, numAfter, includeAnchor, filters, protectedHistory };
        const log: number[][] = [];
        const got = await channelWindow(reader, state, args, fakeFlags(own, log));
        assert.deepEqual(got, await naive(state, own, args));
        // Flags are asked for only near the anchor: never more than the
        // messages that exist, and for an unfiltered narrow no more than the window.
        const asked = log.flat();
        assert.equal(new Set(asked).size, asked.length);
        const unfiltered = !protectedHistory && !Object.keys(filters).length && anchor !== "first_unread";
        if (unfiltered) assert.ok(asked.length <= numBefore + numAfter + 1);
      },
    ),
    { numRuns: 600 },
  );
});

test("the topic summaries and indexes stay equal to a full scan through adds, topic changes, removals and snapshots", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbMsg, { maxLength: 40 }),
      fc.array(arbChange, { maxLength: 10 }),
      fc.constantFrom(...WINDOWS),
      fc.constantFrom(...TAILS),
      async (specs, changes, window, tail) => {
        const { state } = await build(specs, changes, window, tail);
        const ids = await storedIds(state);
        assert.deepEqual(await allIds(reader, state, null), ids);
        const msgs = (await getMsgs(reader, state, ids)) as Msg[];
        const scan = new Map<string, { ids: number[]; senders: Map<number, number> }>();
        for (const m of msgs) {
          const key = m.topic.toLowerCase();
          const t = scan.get(key) ?? scan.set(key, { ids: [], senders: new Map() }).get(key)!;
          t.ids.push(m.id);
          t.senders.set(m.senderId, (t.senders.get(m.senderId) ?? 0) + 1);
        }
        assert.equal(state.count, ids.length);
        assert.ok(state.recentIds.length <= window);
        const summaries = (s: ConvState) =>
          new Map([...s.topics].map(([k, t]) => [k, { count: t.count, senders: t.senders }]));
        const expected = new Map([...scan].map(([k, t]) => [k, { count: t.ids.length, senders: t.senders }]));
        assert.deepEqual(summaries(state), expected);
        for (const [k, t] of scan) assert.deepEqual(await allIds(reader, state, k), t.ids);
        // A snapshot holds the summaries and the window only; loading it gives the same answers.
        const back = convFromSnapshot(convToSnapshot(state), REF);
        back.key = state.key;
        assert.deepEqual(summaries(back), expected);
        assert.deepEqual(await allIds(reader, back, null), ids);
        assert.equal(convToSnapshot(back), convToSnapshot(state));
      },
    ),
    { numRuns: 300 },
  );
});

test("an id tail read while a message was added or removed is used once, not kept", async () => {
  setRecentWindow(0);
  setIdTail(4);
  for (const op of ["add", "remove"] as const) {
    const state = initialConv({ ...REF, key: String(++convN) });
    for (let id = 1; id <= 10; id++) {
      const m = msg(id, "alpha", 1, "hello");
      await commit(
        state,
        [{ type: "msgAdded", msg: m, stored: true } as unknown as Obj],
        addWrites(state, [m]),
      );
    }
    // The tail's store read completes, then a change is applied before it is kept.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    let readDone: () => void = () => {};
    const read = new Promise<void>((r) => (readDone = r));
    const gated: Reader = {
      getRecords: reader.getRecords,
      rangeIndex: async (index, r) => {
        const ids = await store.rangeIndex(0, index, r);
        readDone();
        await held;
        return ids;
      },
    };
    const pending = allIds(gated, state, null);
    await read;
    if (op === "add") {
      const m = msg(11, "alpha", 1, "hello");
      await commit(
        state,
        [{ type: "msgAdded", msg: m, stored: true } as unknown as Obj],
        addWrites(state, [m]),
      );
    } else {
      const [m] = (await getMsgs(reader, state, [10])) as Msg[];
      await commit(state, removedFacts([m!]), removeWrites(state, [m!]));
    }
    release();
    // The read itself answers from the store as it is by then (its range reaches below the tail).
    await pending;
    // The next read sees the change (a tail kept from the earlier read would not).
    const now = await storedIds(state);
    assert.deepEqual(now, op === "add" ? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] : [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(await allIds(reader, state, null), now);
    assert.deepEqual(
      await channelWindow(
        reader,
        state,
        {
          anchor: LARGER_THAN_MAX_MESSAGE_ID,
          numBefore: 3,
          numAfter: 0,
          includeAnchor: true,
          filters: {},
          protectedHistory: false,
        },
        fakeFlags({}, []),
      ).then((w) => w.items.map((i) => i.id)),
      now.slice(-3),
    );
  }
});
