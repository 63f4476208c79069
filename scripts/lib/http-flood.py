#!/usr/bin/env python3
"""Floods one of netext-server's HTTP roles the way issue 26, item 6 describes, on loopback only.

Modes (each prints key=value lines):
  bodies  --count connections at once each POST a --megabytes body (--content-type) to --path
          without a token;
          prints the answers' status codes and how much of the bodies the server took before it
          answered or closed
  slow    --count connections (spread over --sources source addresses as in hold) send a request
          head one byte every --interval seconds (slowloris) and --idle connections from
          127.0.0.2 send nothing; prints how many the server closed within --seconds and after
          how long (median, last, and how many within 1 s: closed at accept)
  hold    --count connections held open for --seconds, spread over --sources loopback source
          addresses (127.0.1.1, 127.0.1.2, ...), then one ordinary request (GET /metrics) from the
          first of them and one from 127.0.0.2: prints how many of the held connections the server
          kept and each request's status and time

Only the server given with --server (HOST:PORT on loopback) is contacted; every loop is bounded
in count and time.
"""
import argparse, selectors, socket, sys, threading, time

def connect(host, port, timeout=10, source=None):
    sock = socket.create_connection((host, port), timeout=timeout, source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock

def bodies(args, host, port):
    size = args.megabytes << 20
    head = (f"POST {args.path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {args.content_type}\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    chunk = b"\x00" * 65536
    statuses, sent_total, lock = {}, [0], threading.Lock()

    def one():
        status, sent = "none", 0
        try:
            sock = connect(host, port)
            sock.sendall(head)
            deadline = time.monotonic() + args.seconds
            while sent < size and time.monotonic() < deadline:
                try:
                    sent += sock.send(chunk[: min(len(chunk), size - sent)])
                except OSError:
                    break
            sock.settimeout(5)
            try:
                answer = sock.recv(64)
                status = answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"
            except OSError:
                status = "closed"
            sock.close()
        except OSError:
            status = "refused"
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            sent_total[0] += sent

    threads = [threading.Thread(target=one) for _ in range(args.count)]
    for thread in threads: thread.start()
    for thread in threads: thread.join(args.seconds + 30)
    for status, count in sorted(statuses.items()):
        print(f"status_{status}={count}")
    print(f"body_mb_sent_before_answer={sent_total[0] >> 20}")
    print(f"body_mb_offered={(size * args.count) >> 20}")

def watch_closes(socks, seconds, feed=None, interval=None):
    """Waits up to `seconds` for the server to close `socks`; returns the close times (s)."""
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    began = time.monotonic()
    closed, next_feed = [], began + (interval or seconds)
    while selector.get_map() and time.monotonic() - began < seconds:
        for key, _ in selector.select(timeout=0.5):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed.append(time.monotonic() - began)
                selector.unregister(key.fileobj)
                key.fileobj.close()
        if feed and time.monotonic() >= next_feed:
            next_feed += interval
            for key in list(selector.get_map().values()):
                feed(key.fileobj)
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    return closed

def slow(args, host, port):
    head = f"POST /queries HTTP/1.1\r\nHost: {host}\r\nX-Padding: ".encode()
    slow_socks, idle_socks = [], []
    sources = [f"127.0.1.{index + 1}" for index in range(args.sources)]
    for index in range(args.count):
        sock = connect(host, port, source=sources[index % len(sources)])
        try:
            sock.sendall(head[:16])
        except OSError:
            pass  # closed at accept (a connection cap): counted as closed below
        slow_socks.append(sock)
    for _ in range(args.idle):
        idle_socks.append(connect(host, port, source="127.0.0.2"))

    def drip(sock):
        try:
            sock.send(b"a")
        except OSError:
            pass

    results = {}
    def run(name, socks, feed):
        results[name] = watch_closes(socks, args.seconds, feed, args.interval if feed else None)
    threads = [threading.Thread(target=run, args=("slow", slow_socks, drip)), threading.Thread(target=run, args=("idle", idle_socks, None))]
    for thread in threads: thread.start()
    for thread in threads: thread.join(args.seconds + 10)
    for name, total in (("slow", args.count), ("idle", args.idle)):
        times = sorted(results.get(name, []))
        print(f"{name}_closed={len(times)}/{total}")
        if times:
            print(f"{name}_closed_median_s={times[len(times) // 2]:.1f}")
            print(f"{name}_closed_last_s={times[-1]:.1f}")
            print(f"{name}_closed_within_1s={sum(1 for t in times if t < 1)}")

def hold(args, host, port):
    socks, refused = [], 0
    sources = [f"127.0.1.{index + 1}" for index in range(args.sources)]
    for index in range(args.count):
        try:
            socks.append(connect(host, port, timeout=5, source=sources[index % len(sources)]))
        except OSError:
            refused += 1
    time.sleep(min(args.seconds, 60))
    # A held connection the server closed (over a connection cap) reads as end of file.
    kept = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            sock.recv(1)  # end of file (or an answer): the server let go of it
        except BlockingIOError:
            kept += 1
        except OSError:
            pass
    print(f"held_connections_kept={kept}/{args.count}")
    print(f"held_connections_refused_at_connect={refused}")
    for name, source in (("same_source", sources[0]), ("other_source", "127.0.0.2")):
        began = time.monotonic()
        status = "failed"
        try:
            probe = connect(host, port, timeout=10, source=source)
            probe.sendall(f"GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answer = probe.recv(64)
            status = answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"
            probe.close()
        except OSError as error:
            status = f"failed({error.__class__.__name__})"
        print(f"probe_{name}_status={status}")
        print(f"probe_{name}_ms={(time.monotonic() - began) * 1000:.0f}")
    for sock in socks: sock.close()

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["bodies", "slow", "hold"])
    parser.add_argument("--server", required=True, help="HOST:PORT on loopback")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--idle", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=16)
    parser.add_argument("--path", default="/key")
    parser.add_argument("--content-type", default="application/octet-stream")
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--interval", type=float, default=5)
    parser.add_argument("--sources", type=int, default=1, help="hold and slow: loopback source addresses to spread the connections over")
    args = parser.parse_args()
    host, _, port = args.server.rpartition(":")
    if host not in ("127.0.0.1", "::1", "localhost"):
        sys.exit("http-flood: only loopback servers")
    if not (1 <= args.count <= 5000 and 0 <= args.idle <= 100 and 1 <= args.megabytes <= 64 and 1 <= args.seconds <= 300
            and 1 <= args.sources <= 250):
        sys.exit("http-flood: --count 1..5000, --idle 0..100, --megabytes 1..64, --seconds 1..300, --sources 1..250")
    {"bodies": bodies, "slow": slow, "hold": hold}[args.mode](args, host, int(port))

if __name__ == "__main__":
    main()
