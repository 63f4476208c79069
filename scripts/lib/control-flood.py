#!/usr/bin/env python3
"""Floods netextd's control socket the way an unprivileged local user could (issue 26, item 2).

Modes (each prints key=value lines, then holds its connections for --hold seconds):
  pipeline  one connection: hello, then COUNT getStatus requests whose answers are never read
  hold      COUNT connections, each completing hello; reports how many netextd accepted
  partial   COUNT connections, each: hello, then a frame header announcing 4 MiB and part of it
  silent    COUNT connections that never send anything; reports how many netextd closed
  big-hello one connection whose first frame announces 1 MiB; reports whether it was closed
  burst     COUNT non-blocking connects at once; reports how many the listen backlog refused

Frames are a 4-byte big-endian length and a JSON payload (docs/control-protocol.md).
Only the Unix socket given is touched.
"""
import argparse, json, os, select, socket, struct, sys, time

def frame(obj):
    payload = json.dumps(obj).encode()
    return struct.pack(">I", len(payload)) + payload

def hello(sock, ident=1):
    sock.sendall(frame({"id": ident, "method": "hello", "params": {"version": 2, "appIdentifier": "attack.flood"}}))

def read_frame(sock, timeout):
    sock.settimeout(timeout)
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (length,) = struct.unpack(">I", header)
    body = b""
    while len(body) < length:
        chunk = sock.recv(min(65536, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)

def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock

def closed_by_peer(sock, timeout):
    """Whether the peer closes the connection within timeout seconds (reads and drops data)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            continue
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["pipeline", "hold", "partial", "silent", "big-hello", "burst"])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=0)
    parser.add_argument("--wait", type=float, default=8, help="seconds to wait for netextd to close connections")
    args = parser.parse_args()
    held = []
    if args.mode == "pipeline":
        sock = connect(args.socket)
        hello(sock)
        sock.setblocking(False)
        request = frame({"id": 2, "method": "getStatus", "params": {}})
        # Stops when netextd has not taken a request for 2 s (it stopped reading), or after 60 s.
        sent, deadline, progress = 0, time.monotonic() + 60, time.monotonic()
        while sent < args.count and time.monotonic() < deadline and time.monotonic() - progress < 2:
            try:
                sock.send(request)
                sent += 1
                progress = time.monotonic()
            except BlockingIOError:
                time.sleep(0.01)
            except (BrokenPipeError, ConnectionResetError):
                break
        print(f"pipeline_sent={sent}")
        print(f"pipeline_requested={args.count}")
        held.append(sock)
    elif args.mode == "hold":
        accepted = refused = 0
        for _ in range(args.count):
            try:
                sock = connect(args.socket)
                hello(sock)
                answer = read_frame(sock, 5)
                if answer and "result" in answer:
                    accepted += 1
                    held.append(sock)
                else:
                    refused += 1
                    sock.close()
            except (OSError, ValueError):
                refused += 1
        print(f"hold_accepted={accepted}")
        print(f"hold_refused={refused}")
    elif args.mode == "partial":
        opened = 0
        for _ in range(args.count):
            try:
                sock = connect(args.socket)
                hello(sock)
                read_frame(sock, 5)
                sock.sendall(struct.pack(">I", 4 * 1024 * 1024) + b"x" * 65536)
                held.append(sock)
                opened += 1
            except (OSError, ValueError):
                pass
        closed = sum(1 for sock in held if closed_by_peer(sock, 0.2))
        print(f"partial_opened={opened}")
        print(f"partial_closed_by_netextd={closed}")
    elif args.mode == "silent":
        for _ in range(args.count):
            try:
                held.append(connect(args.socket))
            except OSError:
                pass
        started = time.monotonic()
        closed = sum(1 for sock in held if closed_by_peer(sock, max(0.1, args.wait - (time.monotonic() - started))))
        print(f"silent_opened={len(held)}")
        print(f"silent_closed_by_netextd={closed}")
    elif args.mode == "big-hello":
        sock = connect(args.socket)
        sock.sendall(struct.pack(">I", 1024 * 1024) + b"{")
        print(f"big_hello_closed={int(closed_by_peer(sock, args.wait))}")
        held.append(sock)
    elif args.mode == "burst":
        refused = 0
        for _ in range(args.count):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(args.socket)
                held.append(sock)
            except BlockingIOError:
                refused += 1
                sock.close()
            except OSError:
                refused += 1
                sock.close()
        print(f"burst_connects={args.count}")
        print(f"burst_refused={refused}")
    sys.stdout.flush()
    time.sleep(args.hold)
    for sock in held:
        sock.close()

if __name__ == "__main__":
    main()
