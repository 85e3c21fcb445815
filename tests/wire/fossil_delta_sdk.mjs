// Decodes Herald's Fossil deltas with the decoder of the real `centrifuge`
// npm SDK (tests/e2e/node_modules, `npm ci --prefix tests/e2e`); run by
// tests/wire/fossil_delta.cpp as
//   node fossil_delta_sdk.mjs <e2e folder> <cases folder> <name>...
// Each case is three files, <name>.source, <name>.delta, <name>.target.
// Prints one line per check, "<name> bytes ok" or "<name> bytes FAIL: why",
// and, for a target that is JSON, "<name> json ok|FAIL: why"; exits 1 when a
// check failed and 2 when the SDK cannot be loaded.
//
// The SDK exports no decoder (its `applyDelta` is module-private in 5.8.0),
// so it is reached two ways:
//  - bytes: the text of `applyDelta` and its helpers, cut from the SDK's
//    build/index.js between two markers and evaluated as it is;
//  - json: through the public `Centrifuge` class's JSON codec
//    (`_codec.applyDeltaIfNeeded`), the path a publication with
//    `delta: true` takes, the delta arriving as a JSON string.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import vm from 'node:vm';

const [e2eDir, casesDir, ...names] = process.argv.slice(2);
if (!e2eDir || !casesDir) {
  console.error('usage: node fossil_delta_sdk.mjs <e2e folder> <cases folder> <name>...');
  process.exit(2);
}

let Centrifuge;
let applyDelta;
try {
  const require = createRequire(join(e2eDir, 'package.json'));
  const main = require.resolve('centrifuge');
  ({ Centrifuge } = require('centrifuge'));
  const text = readFileSync(main, 'utf8');
  const from = text.indexOf('const zValue = [');
  const to = text.indexOf('class JsonCodec', from);
  if (from < 0 || to < 0 || text.indexOf('function applyDelta(', from) < 0) {
    throw new Error(`${main}: applyDelta not found between 'const zValue' and 'class JsonCodec'`);
  }
  applyDelta = vm.runInNewContext(`${text.slice(from, to)}\napplyDelta;`, {}, { filename: main });
} catch (e) {
  console.error(`cannot load the centrifuge SDK from ${e2eDir}/node_modules: ${e.message}`);
  console.error('run `npm ci --prefix tests/e2e` first');
  process.exit(2);
}

const equalBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
let failed = false;
const report = (name, kind, check) => {
  try {
    const why = check();
    console.log(`${name} ${kind} ${why ? `FAIL: ${why}` : 'ok'}`);
    failed ||= Boolean(why);
  } catch (e) {
    console.log(`${name} ${kind} FAIL: ${e.message}`);
    failed = true;
  }
};

const codec = new Centrifuge('ws://127.0.0.1:9/connection/websocket', { websocket: class {} })._codec;
for (const name of names) {
  const read = (ext) => new Uint8Array(readFileSync(join(casesDir, `${name}.${ext}`)));
  const [source, delta, target] = [read('source'), read('delta'), read('target')];

  report(name, 'bytes', () => {
    const out = applyDelta(source, delta);
    return equalBytes(out, target) ? '' : `got ${out.length} bytes, not the ${target.length} expected`;
  });

  let json;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(target));
  } catch {
    continue; // not a JSON target: the bytes check alone
  }
  report(name, 'json', () => {
    // The wire carries the delta as a JSON string: it must be UTF-8 text.
    const data = new TextDecoder('utf-8', { fatal: true }).decode(delta);
    const pub = JSON.parse(JSON.stringify({ data, delta: true }));
    const { newData, newPrevValue } = codec.applyDeltaIfNeeded(pub, source);
    if (!equalBytes(newPrevValue, target)) return 'rebuilt bytes differ from the target';
    return JSON.stringify(newData) === JSON.stringify(json) ? '' : 'decoded value differs';
  });
}
process.exit(failed ? 1 : 0);
