// Helpers of the upload tests (test/uploads*.test.ts): a multipart
// POST /user_uploads, a GET of a served file, and its error assertion.

import assert from "node:assert/strict";
import { basicAuth, type ApiResult, type Creds } from "./embedded.ts";

interface FilePart {
  data: Buffer;
  filename: string;
  type?: string;
}

export async function uploadFiles(
  baseUrl: string,
  auth: Creds | null,
  files: FilePart[],
): Promise<ApiResult> {
  const form = new FormData();
  files.forEach((f, i) => {
    form.append(`file${i}`, new Blob([new Uint8Array(f.data)], { type: f.type ?? "text/plain" }), f.filename);
  });
  const res = await fetch(`${baseUrl}/api/v1/user_uploads`, {
    method: "POST",
    headers: auth ? { authorization: basicAuth(auth) } : {},
    body: form,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // leave the text for the assertion
  }
  return { status: res.status, headers: res.headers, body };
}

/** GET a served file (not under /api/v1), with or without credentials. */
export async function getFile(baseUrl: string, path: string, auth: Creds | null) {
  const res = await fetch(`${baseUrl}${path}`, { headers: auth ? { authorization: basicAuth(auth) } : {} });
  const data = Buffer.from(await res.arrayBuffer());
  type Envelope = { result?: string; msg?: string; code?: string };
  const json = (res.headers.get("content-type") ?? "").startsWith("application/json")
    ? (JSON.parse(data.toString("utf8")) as Envelope)
    : null;
  return { status: res.status, headers: res.headers, data, json };
}

export function assertFileError(
  r: Awaited<ReturnType<typeof getFile>>,
  msg: string,
  status: number,
  code = "BAD_REQUEST",
): void {
  assert.equal(r.status, status, r.data.toString("utf8"));
  assert.deepEqual([r.json?.result, r.json?.msg, r.json?.code], ["error", msg, code]);
}
