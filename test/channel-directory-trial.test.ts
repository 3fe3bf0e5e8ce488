// The channel directory's trial copy (actors/channel-directory/state.ts,
// cloneDir): a handler applies its facts to it to format replies and
// events; the actor's state must come out unchanged whatever the facts,
// and the copy must show every one of them. The copy shares what no fact
// touched, so a new user joining a default channel no longer copies every
// channel's subscribers.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  activeSubscriberIds,
  applyDirFact,
  cloneDir,
  initialDir,
  subscriberListsOf,
  type DirFact,
  type DirState,
} from "../actors/channel-directory/state.ts";
import type { Obj } from "../actors/types.ts";
import { dirChannel as channel, dirSub as sub } from "./support/directory.ts";

/** A directory with two channels, 1,000 subscribers in the first and 3 in the second. */
function directory(): DirState {
  let s = initialDir({ kind: "channel", realm: 1, key: "directory" });
  const apply = (f: DirFact) => (s = applyDirFact(s, fact(f)));
  apply({ type: "channelCreated", channel: channel(1, "general") });
  apply({ type: "channelCreated", channel: channel(2, "small") });
  for (let u = 1; u <= 1000; u++) apply({ type: "subscribed", channelId: 1, userId: u, sub: sub(), from: 1 });
  for (let u = 1; u <= 3; u++) apply({ type: "subscribed", channelId: 2, userId: u, sub: sub(), from: 1 });
  apply({ type: "subscribed", channelId: 2, userId: 9, sub: sub(), from: 1 });
  apply({ type: "dmConvListed", key: "dm:1,2" });
  apply({ type: "roleSeen", userId: 1, role: 400 });
  apply({ type: "handled", key: "defaults:1" });
  return s;
}

/** A fact as the runtime hands it to `applyDirFact`. */
function fact(f: DirFact): Obj {
  return f as unknown as Obj;
}

const TRIAL_FACTS: DirFact[] = [
  { type: "channelCreated", channel: channel(3, "new") },
  { type: "channelChanged", channelId: 2, changes: { name: "renamed", description: "d" } },
  { type: "subscribed", channelId: 2, userId: 7, sub: sub({ color: "#000000" }), from: 50 },
  { type: "unsubscribed", channelId: 2, userId: 1, to: 60 },
  { type: "subChanged", channelId: 2, userId: 2, changes: { isMuted: true } },
  { type: "subscribed", channelId: 3, userId: 1, sub: sub(), from: 70 },
  // A subscription from before spans existed, then the cut that gives it one.
  { type: "subscribed", channelId: 2, userId: 8, sub: sub() },
  { type: "spansInit", cut: 80 },
  { type: "dmConvListed", key: "dm:3,4" },
  { type: "roleSeen", userId: 2, role: 200 },
  { type: "handled", key: "defaults:2" },
];

test("a trial copy takes every fact; the actor's state is left as it was", () => {
  const live = directory();
  const before = JSON.stringify(live);
  const mutedBefore = subscriberListsOf(live, 2);
  let trial = cloneDir(live);
  for (const f of TRIAL_FACTS) trial = applyDirFact(trial, fact(f));
  assert.equal(JSON.stringify(live), before, "the actor's state is unchanged");
  assert.equal(subscriberListsOf(live, 2), mutedBefore, "its cached lists too");
  assert.deepEqual([...activeSubscriberIds(live, 2)], [1, 2, 3, 9]);

  // The same facts applied to the actor's state itself give the trial's result.
  let direct = directory();
  for (const f of TRIAL_FACTS) direct = applyDirFact(direct, fact(f));
  assert.equal(JSON.stringify(trial), JSON.stringify(direct));
  assert.equal(trial.channels["2"]!.name, "renamed");
  assert.equal(trial.byName.renamed, 2);
  assert.equal(trial.byName.small, undefined);
  assert.deepEqual([...activeSubscriberIds(trial, 2)], [2, 3, 7, 8, 9]);
  assert.deepEqual([...subscriberListsOf(trial, 2).muted], [2]);
  assert.equal(trial.channels["2"]!.legacyCut, 80);
  assert.equal(live.channels["2"]!.legacyCut, undefined);
  // The null-prototype indexes stay null-prototype in the copy.
  assert.equal(Object.getPrototypeOf(trial.byName), null);
  assert.equal(Object.getPrototypeOf(trial.dmConvs), null);
});

test("a trial copy shares what its facts did not touch", () => {
  const live = directory();
  let trial = cloneDir(live);
  trial = applyDirFact(trial, fact({ type: "subscribed", channelId: 2, userId: 7, sub: sub(), from: 50 }));
  // The 1,000 subscribers of channel 1 are not copied for a subscription to channel 2.
  assert.equal(trial.subs["1"], live.subs["1"]);
  assert.notEqual(trial.subs["2"], live.subs["2"]);
  assert.equal(trial.subs["2"]!["1"], live.subs["2"]!["1"]);
  assert.equal(trial.channels, live.channels);
  // A copy of a copy leaves both the first copy and the actor's state alone.
  const first = JSON.stringify(trial);
  let second = cloneDir(trial);
  second = applyDirFact(second, fact({ type: "unsubscribed", channelId: 2, userId: 7, to: 90 }));
  assert.equal(JSON.stringify(trial), first);
  assert.equal(live.subs["2"]!["7"], undefined);
  assert.equal(second.subs["2"]!["7"]!.active, false);
});
