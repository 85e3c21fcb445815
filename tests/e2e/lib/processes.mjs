// The one process registry of the end-to-end suites (tests/e2e and
// tests/e2e/cluster): every child process a helper spawns (herald,
// redis-server, haproxy, curl, ...) is registered here with its PID and a
// name, and leaves the registry when it exits. One clean-up hook, run when
// the test process exits or is interrupted (SIGINT/SIGTERM/SIGHUP), signals
// whatever is left by PID (SIGTERM, then SIGKILL after a short grace) and
// removes the temporary directories made with tempDir(), so a failing or
// interrupted test never leaves a server or a directory behind.
//
// It also holds the small process chores the libs used to repeat: waiting
// for an exit after a signal, collecting a bounded log of stdout+stderr, a
// free loopback port, and the sanitizer-report check of herald's output.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after } from "node:test";

/** @type {Map<import('node:child_process').ChildProcess, {name:string, pid:number}>} */
const live = new Map();
const tmpDirs = new Set();

/** True while `child` runs (no exit code and no terminating signal yet). */
export function isAlive(child) {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Registers `child` under `name` until it exits; returns `child`. A child
 * whose spawn failed (no PID; its 'error' event follows) is not registered.
 * @template {import('node:child_process').ChildProcess} C
 * @param {C} child
 * @param {string} name what it is, for messages ("herald", "redis-server", "curl", ...)
 * @returns {C}
 */
export function register(child, name) {
  if (child.pid === undefined) return child;
  live.set(child, { name, pid: child.pid });
  child.once("exit", () => live.delete(child));
  return child;
}

/**
 * `spawn(command, args, options)` with the child registered under `name`
 * (default: the command's base name).
 * @returns {import('node:child_process').ChildProcess}
 */
export function spawnProcess(command, args = [], options = {}, name = path.basename(command)) {
  return register(spawn(command, args, options), name);
}

/** The registered processes that have not exited yet: [{name, pid}]. */
export function liveProcesses() {
  return [...live.values()];
}

/**
 * Sends `signal` to `child` by PID (if it still runs) and waits for its exit;
 * SIGKILL follows after `graceMs` if it is still running by then.
 */
export async function killAndWait(child, signal = "SIGTERM", { graceMs = 5000 } = {}) {
  if (!isAlive(child)) return;
  const exited = once(child, "exit");
  child.kill(signal);
  const t = setTimeout(() => {
    if (isAlive(child)) child.kill("SIGKILL");
  }, graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(t);
  }
}

/**
 * Collects stdout and stderr of `child` (both piped) into one text, cut to
 * its last `keep` characters whenever it grows past `limit`, so a long test
 * with debug output does not grow it forever. `onText(text)` is called after
 * each chunk with the whole text so far.
 * @returns {() => string} the text so far
 */
export function collectOutput(child, { limit = 200_000, keep = 100_000, onText = null } = {}) {
  let text = "";
  const onData = (chunk) => {
    text += chunk.toString("utf8");
    if (text.length > limit) text = text.slice(-keep);
    if (onText) onText(text);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  return () => text;
}

/** A fresh temporary directory, removed by the clean-up hook. */
export function tempDir(tag = "herald-e2e-") {
  const d = mkdtempSync(path.join(os.tmpdir(), tag));
  tmpDirs.add(d);
  return d;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  srv.close();
  await once(srv, "close");
  return port;
}

/**
 * The first sanitizer report in `log` (AddressSanitizer / LeakSanitizer
 * error line, or UBSan's "runtime error:"), or null. A sanitized build
 * (HERALD_TEST_SANITIZED=1) prints them on stderr; herald's stop() fails the
 * test with it.
 */
export function sanitizerReport(log) {
  const m = /(ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:).*/.exec(log);
  return m ? m[0] : null;
}

/**
 * A clean-up stack for a test file (call it at the top level): push
 * functions, or handles with a stop() method (herald, redis-server,
 * haproxy, a subscriber with close wrapped in a function), as they are
 * started; a file-level `after` hook runs them all, last first, and then
 * fails with the first error, so a herald's sanitizer report (its stop()
 * rejects) fails the file instead of being swallowed.
 * @returns {Array<(() => unknown) | {stop: () => unknown}>}
 */
export function cleanupStack() {
  const stack = [];
  after(async () => {
    const errors = [];
    for (const item of stack.splice(0).reverse()) {
      try {
        await (typeof item === "function" ? item() : item.stop());
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return stack;
}

// ------------------------------------------------------------ clean-up hook

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** True once `pid` is gone or a zombie (exited, not yet reaped by Node). */
function exitedPid(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

let cleanedUp = false;

/**
 * Signals every registered process still running by PID: SIGTERM, up to
 * `graceMs` (synchronously: this runs in the 'exit' handler) for them to
 * go, then SIGKILL; then removes the temporary directories.
 */
function cleanUp({ graceMs = 500 } = {}) {
  if (cleanedUp) return;
  cleanedUp = true;
  const left = [...live.keys()].filter(isAlive);
  for (const child of left) {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + graceMs;
  while (left.some((c) => !exitedPid(c.pid)) && Date.now() < deadline) Atomics.wait(sleeper, 0, 0, 10);
  for (const child of left) {
    if (exitedPid(child.pid)) continue;
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const d of tmpDirs) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
}

process.on("exit", () => cleanUp());
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(signal, () => {
    cleanUp();
    process.exit(128 + os.constants.signals[signal]);
  });
}
