// A real S3-protocol server for the upload-storage tests (test/support/s3.ts
// starts it as a child process and stops it by pid): s3rver on the given
// port, its data in the given directory, with one bucket.
/* global process */
import S3rver from "s3rver";

const [port, dir, bucket] = process.argv.slice(2);
const server = new S3rver({
  port: Number(port),
  address: "127.0.0.1",
  silent: true,
  directory: dir,
  configureBuckets: [{ name: bucket }],
});
await server.run();
process.stdout.write(`s3rver ready on ${port}\n`);
const stop = () => server.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
