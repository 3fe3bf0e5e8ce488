// An S3-compatible server for tests: s3rver as a child process on a free
// port with a temporary data dir, stopped by pid. s3rver is a dev
// dependency; with CI=true its absence is a failure, never a skip.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, waitForPort } from "./services.ts";

export interface S3Server {
  endpoint: string;
  bucket: string;
  /** s3rver's fixed credentials. */
  key: string;
  secret: string;
  proc: ChildProcess;
  /** The environment that points the upload storage at this server. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** A reason to skip, or undefined; throws under CI=true. */
export function requireS3rver(): string | undefined {
  if (existsSync(resolve("node_modules/s3rver/package.json"))) return undefined;
  const msg = "missing the s3rver dev dependency (npm install)";
  if (process.env.CI === "true") throw new Error(msg);
  return msg;
}

export async function startS3(bucket = "zulip-uploads"): Promise<S3Server> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "s3rver-"));
  const proc = spawn(process.execPath, [resolve("test/support/s3rver-main.mjs"), String(port), dir, bucket], {
    stdio: "ignore",
  });
  proc.on("error", () => {});
  await waitForPort(port);
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    key: "S3RVER",
    secret: "S3RVER",
    proc,
    env: {
      S3_AUTH_UPLOADS_BUCKET: bucket,
      S3_ENDPOINT_URL: endpoint,
      S3_REGION: "us-east-1",
      S3_KEY: "S3RVER",
      S3_SECRET_KEY: "S3RVER",
    },
    async stop() {
      await new Promise<void>((done) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return done();
        const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
        proc.once("exit", () => {
          clearTimeout(t);
          done();
        });
        proc.kill("SIGTERM");
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
