#!/usr/bin/env python3
"""Protocol checks of herald-baseline's WebSocket side (standard library only).

usage: loadtest/tests/baseline_ws.py path/to/herald-baseline

Starts the baseline on a free loopback port, checks the RFC 6455 handshake,
masked/fragmented client frames, subscribe/ping/connect/unknown commands,
ping and close frames, protocol-error closes, and that one publication
reaches an SSE and a WebSocket subscriber with per-channel offsets 1, 2, ...
Stops the server by its PID. Exit status 0 when every check passed.
"""
import base64, hashlib, json, os, socket, struct, subprocess, sys, time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(op, payload, fin=True, mask=True):
    b = bytes([(0x80 if fin else 0) | op])
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        b += bytes([m | n])
    elif n <= 0xFFFF:
        b += bytes([m | 126]) + struct.pack("!H", n)
    else:
        b += bytes([m | 127]) + struct.pack("!Q", n)
    if not mask:
        return b + payload
    key = os.urandom(4)
    return b + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def recv_until(self, sep):
        while sep not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("closed")
            self.buf += d
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def recv_n(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def upgrade(self):
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = self.recv_until(b"\r\n\r\n").decode()
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        assert head.startswith("HTTP/1.1 101 "), head
        assert f"Sec-WebSocket-Accept: {want}\r\n" in head, head
        return self

    def read_frame(self):
        h = self.recv_n(2)
        assert h[1] & 0x80 == 0, "masked server frame"
        n = h[1] & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.recv_n(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.recv_n(8))[0]
        assert h[0] & 0x80, "fragmented server frame"
        return h[0] & 0x0F, self.recv_n(n)

    def read_json(self):
        op, p = self.read_frame()
        assert op == 1, op
        return json.loads(p)

    def send(self, b):
        self.s.sendall(b)

    def closed(self):
        try:
            return self.s.recv(1) == b""
        except ConnectionResetError:
            return True


def publish(port, channels, data):
    body = json.dumps({"channels": channels, "event": "ev", "data": data}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    r = b""
    while not r.endswith(b"}"):
        r += s.recv(4096)
    s.close()
    assert r.startswith(b"HTTP/1.1 200 "), r


def main():
    exe = sys.argv[1]
    proc = subprocess.Popen([exe, "0", "127.0.0.1"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        checks(port)
    finally:
        proc.kill()
        proc.wait()
    print("baseline_ws: all checks passed")


def checks(port):
    # subscribe before any publication: offset 0, id echoed as given (number, string)
    a = Conn(port).upgrade()
    a.send(frame(1, b'{"op":"subscribe","id":1,"channel":"stream:7"}'))
    r = a.read_json()
    assert r == {"op": "subscribed", "id": 1, "channel": "stream:7", "epoch": "baseline", "offset": 0,
                 "recovered": False}, r
    # a fragmented command with a ping frame between its fragments
    a.send(frame(1, b'{"op":"ping",', fin=False) + frame(9, b"hi") + frame(0, b'"id":"x"}'))
    assert a.read_frame() == (0xA, b"hi")
    assert a.read_json() == {"op": "pong", "id": "x"}
    a.send(frame(1, b'{"op":"connect","id":2,"token":"t"}'))
    assert a.read_json()["op"] == "connected"
    a.send(frame(1, b'{"op":"nope","id":3}'))
    r = a.read_json()
    assert r["op"] == "error" and r["code"] == "unknown_op" and r["id"] == 3, r
    # a 200-byte command (16-bit length)
    a.send(frame(1, json.dumps({"op": "subscribe", "id": 4, "channel": "stream:7", "pad": "x" * 200}).encode()))
    assert a.read_json()["id"] == 4

    sse = Conn(port)
    sse.send(b"GET /v1/sse?channel=stream:7 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"text/event-stream" in sse.recv_until(b"\r\n\r\n")

    for n in (1, 2):
        publish(port, ["stream:7", "user:u"], {"seq": n, "pad": "y" * 300})
        r = a.read_json()
        assert r == {"op": "publication", "channel": "stream:7", "offset": n, "event": "ev",
                     "data": {"seq": n, "pad": "y" * 300}}, r
        line = sse.recv_until(b"\n\n")
        assert line.startswith(b"data: {") and json.loads(line[6:])["data"]["seq"] == n, line
    # a later subscriber gets the channel's latest offset
    b = Conn(port).upgrade()
    b.send(frame(1, b'{"op":"subscribe","id":9,"channel":"stream:7"}'))
    assert b.read_json()["offset"] == 2
    b.send(frame(1, b'{"op":"subscribe","id":10,"channel":"user:u"}'))
    assert b.read_json()["offset"] == 2

    # close: echoed with its code, then the socket is closed
    a.send(frame(8, struct.pack("!H", 1000) + b"bye"))
    assert a.read_frame() == (8, struct.pack("!H", 1000))
    assert a.closed()
    # protocol errors
    for bad, code in ((frame(1, b"{}", mask=False), 1002), (frame(2, b"\x00"), 1003),
                      (frame(0, b"x"), 1002), (frame(9, b"x", fin=False), 1002),
                      (frame(1, b"x" * 70000), 1009)):
        c = Conn(port).upgrade()
        c.send(bad)
        assert c.read_frame() == (8, struct.pack("!H", code)), bad[:4]
        assert c.closed()
    # a bad upgrade
    c = Conn(port)
    c.send(b"GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
    assert c.recv_until(b"\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    # the others still get publications
    publish(port, ["stream:7"], {"seq": 3})
    assert b.read_json()["offset"] == 3
    assert json.loads(sse.recv_until(b"\n\n")[6:])["data"]["seq"] == 3


if __name__ == "__main__":
    main()
