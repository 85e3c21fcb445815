#!/usr/bin/env python3
"""A slow link for tests/e2e/conflate.test.mjs and loadtest/conflate.mjs
(lib/proxy.mjs startSlowLink): a loopback TCP proxy that passes
what the server sends on at BYTES_PER_SECOND at most, and what the client
sends as it comes.

Unlike startProxy() in proxy.mjs (node cannot set socket options), its
connection to the server looks like a real narrow link rather than loopback:
the maximum segment size is clamped to 1400 bytes (loopback's 65483 makes a
slow reader's receive window reopen in 64 KiB steps, so the sender sees no
progress for many seconds at a time) and its receive buffer is small
(RCVBUF_BYTES, which the kernel doubles), so little of the backlog hides in
the proxy's kernel and the window reopens often: at 4000 bytes/s the server
sees bytes acknowledged at least every 1.5 s (with 16 KiB, every 7 s).

usage: slow_link.py <server port> <bytes per second>
Prints "listening <port>" once ready; one line "bytes <n>" per connection
when it ends (bytes passed to the client). Stops on SIGTERM.
"""

import signal
import socket
import sys
import threading
import time

RCVBUF_BYTES = 4 * 1024
MSS_BYTES = 1400
TICK_S = 0.02


def pump_down(upstream, client, rate):
    """Server to client, at `rate` bytes/s at most."""
    passed = 0
    budget = 0.0
    last = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            budget = min(budget + (now - last) * rate, rate / 10)
            last = now
            if budget < 1:
                time.sleep(TICK_S)
                continue
            data = upstream.recv(int(budget))
            if not data:
                break
            client.sendall(data)
            passed += len(data)
            budget -= len(data)
    except OSError:
        pass
    finally:
        print(f"bytes {passed}", flush=True)
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def pump_up(client, upstream):
    """Client to server, as it comes."""
    try:
        while True:
            data = client.recv(65536)
            if not data:
                break
            upstream.sendall(data)
    except OSError:
        pass
    finally:
        try:
            upstream.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main():
    port, rate = int(sys.argv[1]), float(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(f"listening {listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        upstream = socket.socket()
        # Before connect: the SYN carries the clamped MSS, the window the buffer.
        upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, MSS_BYTES)
        try:
            upstream.connect(("127.0.0.1", port))
        except OSError:  # the server is gone (a test's end): refuse this client, go on
            client.close()
            upstream.close()
            continue
        threading.Thread(target=pump_down, args=(upstream, client, rate), daemon=True).start()
        threading.Thread(target=pump_up, args=(client, upstream), daemon=True).start()


if __name__ == "__main__":
    main()
