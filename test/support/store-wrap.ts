// Stores for tests and probes that watch or hold the runtime's writes: the
// store given, with some of its methods replaced, and a gate to hold calls at.
import type { Store } from "../../cluster/storage/contract.ts";

/** `store` with the methods in `over` replaced; every other method is `store`'s own, bound to it. */
export function overriding(store: Store, over: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (Object.hasOwn(over, key)) return over[key as keyof Store];
      const v = Reflect.get(target, key, receiver) as unknown;
      return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A gate store calls wait at while it is closed; the promise close() returns resolves when one waits. */
export class Gate {
  private closed = false;
  private waiting: (() => void)[] = [];
  private onWait: (() => void) | null = null;

  close(): Promise<void> {
    this.closed = true;
    return new Promise((r) => (this.onWait = r));
  }

  open(): void {
    this.closed = false;
    for (const w of this.waiting.splice(0)) w();
  }

  pass(): Promise<void> {
    if (!this.closed) return Promise.resolve();
    return new Promise((r) => {
      this.waiting.push(r);
      this.onWait?.();
      this.onWait = null;
    });
  }
}
