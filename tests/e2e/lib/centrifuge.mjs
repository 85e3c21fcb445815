// The two builds of the real `centrifuge` SDK that the Centrifugo suites run
// every scenario on (docs/centrifugo.md "Which SDKs work today"), and how an
// app reads a publication's data from either.

import { Centrifuge } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";

/** [name, SDK class]: Centrifugo's JSON protocol and its Protobuf protocol. */
export const ENCODINGS = [
  ["json", Centrifuge],
  ["protobuf", CentrifugeProtobuf],
];

/**
 * A publication's data as the app reads it: the JSON build hands over the
 * parsed JSON value, the Protobuf build the bytes of `Publication.data`, which
 * Herald fills with the publication's JSON text (UTF-8).
 */
export function pubData(ctx) {
  if (!(ctx.data instanceof Uint8Array)) return ctx.data;
  const text = new TextDecoder().decode(ctx.data);
  try {
    return JSON.parse(text);
  } catch {
    return { notJson: text }; // fails the test's comparisons, visibly, instead of throwing inside the SDK
  }
}
