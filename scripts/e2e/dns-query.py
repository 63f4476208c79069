#!/usr/bin/env python3
"""Asks SERVER (port 53) for NAME's A records over UDP, or over TCP with "tcp" (RFC 1035
§4.2.2: a two-byte length before each message), and prints each address on a line of its own.
Exit 0 with at least one address, 1 without (or on a timeout of 3 s), 2 on an answer that is not
to the question asked. Usage: dns-query.py SERVER NAME [tcp]"""
import random
import socket
import struct
import sys

server, name = sys.argv[1], sys.argv[2].rstrip(".")
over_tcp = len(sys.argv) > 3 and sys.argv[3] == "tcp"
ident = random.randrange(65536)
question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
query = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question
family = socket.AF_INET6 if ":" in server else socket.AF_INET
try:
    if over_tcp:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(3)
        sock.connect((server, 53))
        sock.sendall(struct.pack("!H", len(query)) + query)
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                sys.exit(1)
            data += chunk
        answer = data[2:2 + struct.unpack("!H", data[:2])[0]]
    else:
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.settimeout(3)
        sock.sendto(query, (server, 53))
        answer, _ = sock.recvfrom(65536)
except (socket.timeout, OSError):
    sys.exit(1)
got_id, flags, qdcount, ancount = struct.unpack("!HHHH", answer[:8])
if got_id != ident or not flags & 0x8000 or answer[12:12 + len(question)].lower() != question.lower():
    sys.exit(2)
offset = 12 + len(question)
found = 0
for _ in range(ancount):
    # A name: a pointer (two bytes) or labels.
    while True:
        length = answer[offset]
        if length & 0xC0 == 0xC0:
            offset += 2
            break
        offset += 1 + length
        if length == 0:
            break
    rtype, rclass, ttl, rdlength = struct.unpack("!HHIH", answer[offset:offset + 10])
    offset += 10
    if rtype == 1 and rdlength == 4:
        print(socket.inet_ntoa(answer[offset:offset + 4]))
        found += 1
    offset += rdlength
sys.exit(0 if found else 1)
