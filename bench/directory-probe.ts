// What a channel-directory turn pays for its trial copy (cloneDir in
// actors/channel-directory/state.ts) when a new user joins the realm's
// default channels: the copy plus one `subscribed` fact per default
// channel, for organizations of 1,000 to 100,000 users with 50 channels
// whose sizes follow a Zipf law (channel k holds 1/k of the users; the
// first three are the defaults). Compares the copy-on-write copy with a
// deep copy of the whole state (structuredClone, what cloneDir did before).
// `npx tsx bench/directory-probe.ts` (DIRECTORY_PROBE_USERS, default
// 1000,10000,100000).
import {
  applyDirFact,
  cloneDir,
  initialDir,
  type Channel,
  type DirState,
} from "../actors/channel-directory/state.ts";
import { dict } from "../actors/dict.ts";
import type { Obj } from "../actors/types.ts";
import { dirChannel, dirSub } from "../test/support/directory.ts";

const SIZES = (process.env.DIRECTORY_PROBE_USERS ?? "1000,10000,100000").split(",").map(Number);
const CHANNELS = 50;
const DEFAULTS = 3;

function deepCopy(state: DirState): DirState {
  const s = structuredClone(state);
  s.byName = dict(s.byName);
  s.dmConvs = dict(s.dmConvs);
  return s;
}

const sub = () => dirSub();
const channel = (id: number): Channel => dirChannel(id, `channel ${id}`, { isDefault: id <= DEFAULTS });

for (const users of SIZES) {
  let s = initialDir({ kind: "channel", realm: 1, key: "directory" });
  const apply = (f: Obj) => (s = applyDirFact(s, f));
  for (let c = 1; c <= CHANNELS; c++)
    apply({ type: "channelCreated", channel: channel(c) } as unknown as Obj);
  for (let c = 1; c <= CHANNELS; c++)
    for (let u = 1; u <= Math.floor(users / c); u++)
      apply({ type: "subscribed", channelId: c, userId: u, sub: sub(), from: 1 } as unknown as Obj);
  const join = (copy: (x: DirState) => DirState) => {
    let t = copy(s);
    for (let c = 1; c <= DEFAULTS; c++)
      t = applyDirFact(t, {
        type: "subscribed",
        channelId: c,
        userId: users + 1,
        sub: sub(),
        from: 2,
      } as unknown as Obj);
    return t;
  };
  const times: string[] = [];
  for (const [label, copy] of [
    ["deep copy", deepCopy],
    ["copy on write", cloneDir],
  ] as const) {
    join(copy);
    const n = users >= 100_000 ? 3 : 10;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) join(copy);
    times.push(`${label} ${((performance.now() - t0) / n).toFixed(2)} ms`);
  }
  console.log(
    `${users} users: a new user's default channels, trial copy and ${DEFAULTS} facts: ${times.join(", ")}`,
  );
}
