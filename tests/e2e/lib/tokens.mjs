// JWT helpers for the authentication tests: keys generated with Node's
// crypto at run time, tokens signed with crypto (HS256 via createHmac, RS256
// and ES256 via crypto.sign; ES256 in the JWS R||S form, dsaEncoding
// 'ieee-p1363'). Nothing here is a fixture with an unknown key.

import crypto from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const part = (obj) => Buffer.from(typeof obj === "string" ? obj : JSON.stringify(obj)).toString("base64url");

/** Seconds since the Unix epoch. */
export const nowS = () => Math.floor(Date.now() / 1000);

/**
 * Signs `claims` as a compact JWS.
 * @param {object} claims payload
 * @param {{alg:string, key:any, header?:object}} how `alg` HS256 (key: secret), RS256 / ES256
 *   (key: private KeyObject), or "none" (no signature).
 */
export function signJwt(claims, { alg, key, header = {} }) {
  const head = part({ alg, typ: "JWT", ...header });
  const body = part(claims);
  const input = `${head}.${body}`;
  let sig;
  if (alg === "none") sig = "";
  else if (alg === "HS256") sig = crypto.createHmac("sha256", key).update(input).digest("base64url");
  else if (alg === "RS256") sig = crypto.sign("sha256", Buffer.from(input), key).toString("base64url");
  else if (alg === "ES256")
    sig = crypto.sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" }).toString("base64url");
  else throw new Error(`unsupported alg ${alg}`);
  return `${input}.${sig}`;
}

/** A random HS256 secret (hex text, 64 characters). */
export const randomSecret = () => crypto.randomBytes(32).toString("hex");

/** A fresh RSA (2048) or EC P-256 key pair: {privateKey, publicPem}. */
export function keyPair(kind) {
  const { privateKey, publicKey } =
    kind === "rsa"
      ? crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
      : crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, publicPem: publicKey.export({ type: "spki", format: "pem" }) };
}

/** Writes `text` to a new file (mode 600) in a fresh temp dir; returns its path. */
export function secretFile(name, text) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "herald-auth-"));
  const file = path.join(dir, name);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

/**
 * Everything a secured herald needs: HS256 secret, API key, their files, and
 * `args` for startHerald; `token(claims)` signs HS256 with the secret,
 * `exp` defaulting to now + 300 s.
 */
export function hsSetup() {
  const secret = randomSecret();
  const apiKey = crypto.randomBytes(24).toString("hex");
  const args = [`--jwt-secret-file=${secretFile("jwt-secret", secret + "\n")}`, `--api-key-file=${secretFile("api-key", apiKey)}`];
  return {
    secret,
    apiKey,
    args,
    token: (claims) => signJwt({ exp: nowS() + 300, ...claims }, { alg: "HS256", key: secret }),
    auth: { authorization: `Bearer ${apiKey}` },
  };
}
