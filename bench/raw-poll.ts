// A lean HTTP/1.1 client for the fan-out figure: one keep-alive socket per
// long-poll, the request written by hand and the answer framed by its
// Content-Length, timed when its last byte arrives. Node's `http` client
// runs a parser, an IncomingMessage stream and several events per answer;
// with a thousand answers landing at once on this 2-core machine, that
// client-side work was most of what a single measuring process reported
// (bare Fastify's p99 read through it: 135 ms; through this client: 51-77
// ms). Both sides of the comparison (the server and bare Fastify) are read
// through this same client.
import { connect, type Socket } from "node:net";

export interface RawAnswer {
  /** performance.now() when the answer's last byte arrived. */
  at: number;
  status: number;
  body: string;
}

const HEADER_END = Buffer.from("\r\n\r\n");

export class RawConn {
  private sock: Socket | null = null;
  private chunks: Buffer[] = [];
  private got = 0;
  /** Header and body bytes of the answer being read; -1 until its headers are in. */
  private want = -1;
  /** Where the answer's body starts (valid once `want` is). */
  private bodyAt = 0;
  private waiting: { resolve(a: RawAnswer): void; reject(e: Error): void } | null = null;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** One GET; resolves with its answer. One request at a time per connection. */
  get(path: string, headers: Record<string, string>): Promise<RawAnswer> {
    if (this.waiting !== null) return Promise.reject(new Error("RawConn: a request is already waiting"));
    let head = `GET ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    head += "\r\n";
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.chunks = [];
      this.got = 0;
      this.want = -1;
      this.socket().write(head);
    });
  }

  close(): void {
    this.sock?.destroy();
    this.sock = null;
  }

  private socket(): Socket {
    if (this.sock !== null && !this.sock.destroyed) return this.sock;
    const s = connect({ host: this.host, port: this.port, noDelay: true });
    s.on("data", (d: Buffer) => this.onData(d));
    const lost = (err?: Error) => {
      if (this.sock === s) this.sock = null;
      const w = this.waiting;
      this.waiting = null;
      w?.reject(err ?? new Error("connection closed before the answer"));
    };
    s.on("error", lost);
    s.on("close", () => lost());
    this.sock = s;
    return s;
  }

  private onData(d: Buffer): void {
    const at = performance.now();
    this.chunks.push(d);
    this.got += d.length;
    if (this.want < 0) {
      const buf = this.chunks.length === 1 ? d : Buffer.concat(this.chunks);
      const end = buf.indexOf(HEADER_END);
      if (end < 0) return;
      const head = buf.toString("latin1", 0, end);
      const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (len === null) {
        this.fail(new Error(`RawConn: an answer without Content-Length: ${head.split("\r\n", 1)[0]}`));
        return;
      }
      this.bodyAt = end + HEADER_END.length;
      this.want = this.bodyAt + Number(len[1]);
    }
    if (this.got < this.want) return;
    if (this.got > this.want) {
      this.fail(new Error("RawConn: bytes after the answer (none were asked for)"));
      return;
    }
    const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const status = Number(buf.toString("latin1", 9, 12));
    const body = buf.toString("utf8", this.bodyAt, this.want);
    const w = this.waiting;
    this.waiting = null;
    this.chunks = [];
    w?.resolve({ at, status, body });
  }

  private fail(err: Error): void {
    const w = this.waiting;
    this.waiting = null;
    this.close();
    w?.reject(err);
  }
}
