#!/usr/bin/env node
// Issues an HS256 subscriber token for Herald (RFC 7519), the way a backend
// would (docs/auth.md). Node.js 20+, no npm dependencies.
//
//   HERALD_JWT_SECRET=... node demo/token.mjs --sub G... [--ttl 3600] [--channels a,b]
//
// Prints the token. `--sub` is the account the token is for (it may read
// `user:<sub>` and every `stream:` channel); `--ttl` is its lifetime in
// seconds; `--channels` adds a `channels` claim that narrows what it may read.

import crypto from "node:crypto";
import { pathToFileURL } from "node:url";

/**
 * Makes a compact HS256 JWT.
 * @param {object} claims the payload (sub, exp, ...)
 * @param {string|Buffer} secret the shared secret (at least 32 bytes)
 * @returns {string}
 */
export function signHs256(claims, secret) {
  const part = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = part({ alg: "HS256", typ: "JWT" });
  const body = part(claims);
  const sig = crypto.createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
  return `${head}.${body}.${sig}`;
}

function main(argv) {
  const opts = { ttl: 3600 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    if (flag === "--sub") opts.sub = value();
    else if (flag === "--ttl") opts.ttl = Number(value());
    else if (flag === "--channels") opts.channels = value().split(",").filter(Boolean);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  const secret = process.env.HERALD_JWT_SECRET;
  if (!secret) throw new Error("set HERALD_JWT_SECRET");
  if (!opts.sub) throw new Error("--sub is required");
  if (!Number.isInteger(opts.ttl) || opts.ttl <= 0) throw new Error("--ttl must be a positive integer");
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: opts.sub, iat: now, exp: now + opts.ttl };
  if (opts.channels) claims.channels = opts.channels;
  console.log(signHs256(claims, secret));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`token.mjs: ${err.message}`);
    process.exit(2);
  }
}
