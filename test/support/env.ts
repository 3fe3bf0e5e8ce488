// Environment variables a suite's servers read when they start (e.g.
// ADMIN_TOKEN), set for the suite and restored after it.
import { after, before } from "node:test";

/**
 * Sets `vars` (a function: read then, e.g. a port a suite's earlier
 * before() chose) in before() and restores the previous values in after().
 * Call it before useEmbedded/useChat/useCluster so their start sees them.
 */
export function useEnv(vars: Record<string, string> | (() => Record<string, string>)): void {
  const saved: Record<string, string | undefined> = {};
  before(() => {
    for (const [k, v] of Object.entries(typeof vars === "function" ? vars() : vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}
