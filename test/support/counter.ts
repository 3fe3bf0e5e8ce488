// The state half of the small behaviors the runtime's tests run: a state
// that counts its facts (each one adds one, whatever it holds), whose
// snapshot is its JSON, so a snapshot's `n` is the seq it covers.
import type { Behavior } from "../../actors/types.ts";

export interface Counter {
  n: number;
}

export const countingState = {
  initial: (): Counter => ({ n: 0 }),
  apply(s: Counter): Counter {
    s.n++;
    return s;
  },
  toSnapshot: (s: Counter): string => JSON.stringify(s),
  fromSnapshot: (d: string): Counter => JSON.parse(d) as Counter,
} satisfies Pick<Behavior<Counter>, "initial" | "apply" | "toSnapshot" | "fromSnapshot">;
