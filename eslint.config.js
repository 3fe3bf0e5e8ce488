// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", "proto/gen/**", "data/**", "coverage/**", "dist/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // Runtime code logs through cluster/log.ts (pino: levels, JSON lines,
    // trace and request ids); the CLIs, tests and benchmarks print.
    files: ["actors/**/*.ts", "cluster/**/*.ts", "gateway/**/*.ts", "webhook/**/*.ts", "server.ts"],
    rules: { "no-console": "error" },
  },
  {
    // Actor code is plain logic: it never touches the network or the store
    // directly. Only cluster/ and gateway/ may import these clients.
    files: ["actors/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["@nats-io/*", "nats"], message: "actors never import NATS" },
            { group: ["@grpc/*"], message: "actors never import gRPC" },
            { group: ["redis", "redis-om", "lmdb"], message: "actors never import store clients" },
            {
              group: ["@opentelemetry/*"],
              message: "actors never import OpenTelemetry (the runtime traces turns)",
            },
            {
              group: ["**/cluster/**", "**/gateway/**"],
              message: "actors depend on nothing outside actors/",
            },
          ],
        },
      ],
    },
  },
);
