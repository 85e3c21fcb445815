// A loopback TCP proxy the e2e suites put between a client and Herald to cut
// or stall its connections.

import net from "node:net";

/** A TCP proxy in front of `port`: `drop()` cuts every connection through it
 * (the SDK sees its transport close and reconnects through the proxy);
 * `retarget(port)` sends new connections to another port (a load balancer
 * whose backend changed);
 * `pauseUpstream()` / `resumeUpstream()` stop and restart reading from Herald. */
export async function startProxy(port) {
  const pairs = new Set();
  let paused = false;
  let target = port;
  const server = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (paused) upstream.pause();
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    retarget(p) {
      target = p;
    },
    drop() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    pauseUpstream() {
      paused = true;
      for (const { upstream } of pairs) {
        upstream.unpipe();
        upstream.pause();
      }
    },
    resumeUpstream() {
      paused = false;
      for (const { client, upstream } of pairs) {
        upstream.pipe(client);
        upstream.resume();
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
