#!/usr/bin/env python3
"""A minimal authoritative DNS responder for the lab (RFC 1035 §4.1): answers A queries for names
within ZONE (every name when ZONE is ".") with ADDRESS, answers other types with no records,
refuses names outside the zone with NXDOMAIN, and appends "NAME TYPE from SOURCE" to LOG.
Usage: dns-responder.py BIND_ADDRESS ZONE ADDRESS LOG  (runs until killed)."""
import socket
import sys

bind, zone, answer, log_path = sys.argv[1:5]
zone = zone.strip(".").lower()
server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind((bind, 53))


def read_name(message, offset):
    labels = []
    while message[offset] != 0:
        length = message[offset]
        labels.append(message[offset + 1:offset + 1 + length].decode("ascii", "replace").lower())
        offset += 1 + length
    return ".".join(labels), offset + 1


while True:
    query, source = server.recvfrom(4096)
    try:
        name, end = read_name(query, 12)
        qtype = int.from_bytes(query[end:end + 2], "big")
    except (IndexError, ValueError):
        continue
    with open(log_path, "a") as log:
        log.write(f"{name} {qtype} from {source[0]}\n")
    within = zone == "" or name == zone or name.endswith("." + zone)
    header = query[:2] + bytes([0x84 | (query[2] & 0x01), 0x80 | (0 if within else 3)])
    question = query[12:end + 4]
    if within and qtype == 1:
        record = b"\xc0\x0c" + (1).to_bytes(2, "big") + (1).to_bytes(2, "big") + (60).to_bytes(4, "big") + (4).to_bytes(2, "big") + socket.inet_aton(answer)
        server.sendto(header + b"\x00\x01\x00\x01\x00\x00\x00\x00" + question + record, source)
    else:
        server.sendto(header + b"\x00\x01\x00\x00\x00\x00\x00\x00" + question, source)
