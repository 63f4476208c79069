#!/usr/bin/env python3
"""A minimal authoritative DNS responder for the lab (RFC 1035 §4.1, §4.2.2 for TCP): answers A
queries for names within ZONE with ADDRESS, answers other types with no records, refuses names
outside the zone with NXDOMAIN. Names starting with "big." are answered over UDP with the TC bit
and no records (as a too-large answer would be), so the client retries over TCP. Appends
"NAME TYPE from SOURCE" (plus " tcp" for TCP) to LOG.
Usage: dns-responder.py BIND_ADDRESS ZONE ADDRESS LOG [NAME=ADDRESS ...]  (runs until killed;
BIND_ADDRESS IPv4 or IPv6, ADDRESS the IPv4 address of the A answers; a NAME=ADDRESS pair gives
that name an address of its own)."""
import socket
import sys
import threading

bind, zone, answer, log_path = sys.argv[1:5]
own_addresses = dict(pair.lower().split("=", 1) for pair in sys.argv[5:])
family = socket.AF_INET6 if ":" in bind else socket.AF_INET
zone = zone.strip(".").lower()
lock = threading.Lock()


def read_name(message, offset):
    labels = []
    while message[offset] != 0:
        length = message[offset]
        labels.append(message[offset + 1:offset + 1 + length].decode("ascii", "replace").lower())
        offset += 1 + length
    return ".".join(labels), offset + 1


def respond(query, source, transport):
    try:
        name, end = read_name(query, 12)
        qtype = int.from_bytes(query[end:end + 2], "big")
    except (IndexError, ValueError):
        return None
    with lock, open(log_path, "a") as log:
        log.write(f"{name} {qtype} from {source}{' tcp' if transport == 'tcp' else ''}\n")
    within = zone == "" or name == zone or name.endswith("." + zone)
    truncated = transport == "udp" and name.startswith("big.")
    flags = 0x84 | (query[2] & 0x01) | (0x02 if truncated else 0)
    header = query[:2] + bytes([flags, 0x80 | (0 if within else 3)])
    question = query[12:end + 4]
    if within and qtype == 1 and not truncated:
        record = b"\xc0\x0c" + (1).to_bytes(2, "big") + (1).to_bytes(2, "big") + (60).to_bytes(4, "big") + (4).to_bytes(2, "big") + socket.inet_aton(own_addresses.get(name, answer))
        return header + b"\x00\x01\x00\x01\x00\x00\x00\x00" + question + record
    return header + b"\x00\x01\x00\x00\x00\x00\x00\x00" + question


def serve_tcp():
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((bind, 53))
    listener.listen(16)
    while True:
        connection, peer = listener.accept()
        connection.settimeout(5)
        try:
            length = int.from_bytes(connection.recv(2), "big")
            query = b""
            while len(query) < length:
                chunk = connection.recv(length - len(query))
                if not chunk:
                    break
                query += chunk
            reply = respond(query, peer[0], "tcp")
            if reply:
                connection.sendall(len(reply).to_bytes(2, "big") + reply)
        except (OSError, ValueError):
            pass
        connection.close()


threading.Thread(target=serve_tcp, daemon=True).start()
server = socket.socket(family, socket.SOCK_DGRAM)
server.bind((bind, 53))
while True:
    query, source = server.recvfrom(4096)
    reply = respond(query, source[0], "udp")
    if reply:
        try:
            server.sendto(reply, source)
        except OSError:
            pass  # no route back to a source the lab cannot reach: that query goes unanswered
