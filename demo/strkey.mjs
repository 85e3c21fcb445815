// Stellar StrKey (SEP-23) for ed25519 account ids ("G..." addresses), in
// plain JavaScript with no dependencies. Same algorithm as net/wire/strkey.cpp:
//
//   base32(version byte 48 || 32-byte key || CRC16-XModem of those 33 bytes,
//          little-endian)
//
// RFC 4648 base32, alphabet A-Z2-7, uppercase, no padding: 35 bytes give
// exactly 56 characters, the first of which is 'G'.

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** StrKey version byte of an ed25519 public key (account id): 6 << 3. */
export const ACCOUNT_ID_VERSION = 6 << 3;

/** Length of an account id StrKey in characters. */
export const ACCOUNT_ID_LENGTH = 56;

/**
 * CRC16-XModem (poly 0x1021, init 0, no reflection, no final XOR).
 * @param {Uint8Array} bytes
 * @returns {number} 0..65535; crc16Xmodem(bytes of "123456789") === 0x31c3
 */
export function crc16Xmodem(bytes) {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/**
 * RFC 4648 base32 without padding. A trailing partial group is zero-filled.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function base32Encode(bytes) {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff; // at most 12 live bits
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(buffer >> bits) & 31];
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * Strict RFC 4648 base32 decoding without padding: uppercase A-Z2-7 only,
 * and the unused trailing bits of the last character must be zero.
 * @param {string} text
 * @returns {Uint8Array|null} null when `text` is not canonical base32
 */
export function base32Decode(text) {
  const out = [];
  let buffer = 0;
  let bits = 0;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return null;
    buffer = ((buffer << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((buffer >> bits) & 0xff);
    }
  }
  // Leftover bits must be fewer than 5 and all zero (SEP-23: "unused bits of
  // the last symbol must be zero"; lengths 1, 3, 6 mod 8 are invalid).
  if (bits >= 5 || (buffer & ((1 << bits) - 1)) !== 0) return null;
  return Uint8Array.from(out);
}

/**
 * Encodes a 32-byte ed25519 public key as a SEP-23 account id ("G...").
 * @param {Uint8Array|number[]} key 32 bytes
 * @returns {string} 56 characters
 * @throws {TypeError} when `key` is not 32 bytes
 */
export function encodeAccountId(key) {
  if (!key || key.length !== 32) throw new TypeError("account key must be 32 bytes");
  const raw = new Uint8Array(35);
  raw[0] = ACCOUNT_ID_VERSION;
  raw.set(key, 1);
  const crc = crc16Xmodem(raw.subarray(0, 33));
  raw[33] = crc & 0xff;
  raw[34] = crc >> 8;
  return base32Encode(raw);
}

/**
 * Decodes a SEP-23 account id to its 32-byte key.
 * @param {string} text
 * @returns {Uint8Array|null} null unless `text` is a valid account id
 */
export function decodeAccountId(text) {
  if (typeof text !== "string" || text.length !== ACCOUNT_ID_LENGTH) return null;
  const raw = base32Decode(text);
  if (!raw || raw.length !== 35 || raw[0] !== ACCOUNT_ID_VERSION) return null;
  const crc = crc16Xmodem(raw.subarray(0, 33));
  if (raw[33] !== (crc & 0xff) || raw[34] !== crc >> 8) return null;
  if (base32Encode(raw) !== text) return null; // canonical form only
  return raw.slice(1, 33);
}

/**
 * True iff `text` is a valid Stellar account id (SEP-23 StrKey, "G...").
 * Same rules as herald::net::is_account_id.
 * @param {string} text
 * @returns {boolean}
 */
export function isAccountId(text) {
  return decodeAccountId(text) !== null;
}
