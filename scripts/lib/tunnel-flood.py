#!/usr/bin/env python3
"""Floods a NetExt tunnel server's UDP port the way an attacker on the internet could (issue 26, item 8).

Modes (each prints key=value lines when done):
  mac1    initiations with a valid mac1 (the attacker knows the server's public key) and no mac2,
          random otherwise: under load each one costs the server a cookie reply, never a handshake
  mac2    the same, but first one cookie is obtained and then every initiation carries a valid mac2
          for it (one source reusing one cookie): the server's per-source limit must hold them
  random  random datagrams of every length from 0 to 1500 bytes, a quarter of them starting with a
          valid message type, to count how many distinct drop reasons the server ends up with

Wire format: docs/tunnel-protocol.md (148-byte initiation; mac1/mac2 are the first 16 bytes of
HMAC-SHA256; cookie replies are ChaCha20-Poly1305 under SHA256("cookie--" || server key) with the
initiation's mac1 as associated data). Only the address given with --server is sent to, and the
flood ends after --seconds.
"""
import argparse, base64, hashlib, hmac, os, random, socket, sys, time

INITIATION = 148
MAC1_OFFSET = INITIATION - 32
MAC2_OFFSET = INITIATION - 16

def mac(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()[:16]

def initiation(mac1_key, cookie=None):
    body = bytes([1, 0, 0, 0]) + os.urandom(MAC1_OFFSET - 4)
    message = body + mac(mac1_key, body)
    return message + (mac(cookie, message) if cookie else bytes(16))

def obtain_cookie(sock, mac1_key, cookie_key, deadline):
    """Sends mac1-only initiations until the server, under load, answers one with a cookie reply."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    sent = {}
    sock.setblocking(False)
    while time.monotonic() < deadline:
        for _ in range(200):
            message = initiation(mac1_key)
            sent[message[4:8]] = message[MAC1_OFFSET:MAC2_OFFSET]
            try:
                sock.send(message)
            except BlockingIOError:
                break
        time.sleep(0.002)
        while True:
            try:
                reply = sock.recv(2048)
            except BlockingIOError:
                break
            if len(reply) == 52 and reply[0] == 3 and reply[4:8] in sent:
                return ChaCha20Poly1305(cookie_key).decrypt(reply[8:20], reply[20:52], sent[reply[4:8]])
    return None

def flood(sock, rate, seconds, make):
    """Sends make() at `rate` per second for `seconds`, in 1 ms slices; returns (sent, refused)."""
    sock.setblocking(False)
    sent = refused = 0
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= seconds:
            break
        due = int(elapsed * rate) - sent - refused
        for _ in range(max(0, min(due, 5000))):
            try:
                sock.send(make())
                sent += 1
            except (BlockingIOError, ConnectionRefusedError):
                refused += 1
        try:
            while sock.recv(2048):
                pass
        except (BlockingIOError, ConnectionRefusedError):
            pass
        time.sleep(0.001)
    return sent, refused, time.monotonic() - start

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["mac1", "mac2", "random"])
    parser.add_argument("--server", required=True, help="HOST:PORT of the tunnel server")
    parser.add_argument("--server-key", required=True, help="the server's public key, base64")
    parser.add_argument("--rate", type=int, default=50000, help="datagrams per second")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--name", default="flood", help="prefix of the key=value lines")
    args = parser.parse_args()
    host, _, port = args.server.rpartition(":")
    server_key = base64.b64decode(args.server_key)
    mac1_key = hashlib.sha256(b"mac1----" + server_key).digest()
    cookie_key = hashlib.sha256(b"cookie--" + server_key).digest()
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.connect((host.strip("[]"), int(port)))

    if args.mode == "mac1":
        pool = [initiation(mac1_key) for _ in range(1024)]
        make = lambda: pool[random.randrange(1024)]
    elif args.mode == "mac2":
        cookie = obtain_cookie(sock, mac1_key, cookie_key, time.monotonic() + 10)
        print(f"{args.name}_cookie_obtained={'yes' if cookie else 'no'}", flush=True)
        if cookie is None:
            return 1
        pool = [initiation(mac1_key, cookie) for _ in range(1024)]
        make = lambda: pool[random.randrange(1024)]
    else:
        def make():
            length = random.randrange(1501)
            data = bytearray(os.urandom(length))
            if length >= 4 and random.random() < 0.25:
                data[0:4] = bytes([random.randrange(1, 5), 0, 0, 0])
            return bytes(data)
    sent, refused, elapsed = flood(sock, args.rate, args.seconds, make)
    print(f"{args.name}_sent={sent}", flush=True)
    print(f"{args.name}_rate_per_s={int(sent / elapsed)}", flush=True)
    if refused:
        print(f"{args.name}_send_refused={refused}", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
