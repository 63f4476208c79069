#!/usr/bin/env python3
"""Checks that every TCP connection in a capture carries TLS records only.

Usage: pcap-tls-only.py CAPTURE MIN_CONNECTIONS [--alpn PROTOCOL]

Reads a pcap file (Ethernet link type, as tcpdump writes for eth0 and lo on Linux), rebuilds
each direction of each connection whose SYN was captured from its sequence numbers, and walks
its bytes as TLS records (RFC 8446 §5.1: content type 20-23, legacy version 3.x, length at most
2^14 + 256). Anything else — an HTTP request line, a record of another type — fails the check,
naming the connection and the byte offset. At least MIN_CONNECTIONS connections must have been
checked from their first byte. With --alpn, every ClientHello must offer PROTOCOL in its
application_layer_protocol_negotiation extension (RFC 7301 §3.1)."""
import struct
import sys


def packets(path):
    data = open(path, "rb").read()
    if len(data) < 24:
        return
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        sys.exit(f"{path}: link type {linktype}, expected Ethernet (1)")
    offset = 24
    while offset + 16 <= len(data):
        _, _, captured, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        yield data[offset + 16:offset + 16 + captured]
        offset += 16 + captured


def tcp_segments(path):
    for frame in packets(path):
        if len(frame) < 14:
            continue
        ethertype = struct.unpack("!H", frame[12:14])[0]
        ip = frame[14:]
        if ethertype == 0x0800 and len(ip) >= 20 and ip[9] == 6:
            header = (ip[0] & 0x0F) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            src, dst, tcp = ip[12:16], ip[16:20], ip[header:total]
        elif ethertype == 0x86DD and len(ip) >= 40 and ip[6] == 6:
            total = 40 + struct.unpack("!H", ip[4:6])[0]
            src, dst, tcp = ip[8:24], ip[24:40], ip[40:total]
        else:
            continue
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        flags = tcp[13]
        payload = tcp[(tcp[12] >> 4) * 4:]
        yield (src, sport, dst, dport), seq, bool(flags & 0x02), payload


def client_hello_alpn(record):
    """The ALPN protocol names a ClientHello record's body offers (empty when none)."""
    body = record
    if len(body) < 4 or body[0] != 1:
        return None
    at = 4 + 2 + 32
    at += 1 + body[at]  # session id
    at += 2 + struct.unpack("!H", body[at:at + 2])[0]  # cipher suites
    at += 1 + body[at]  # compression methods
    end = at + 2 + struct.unpack("!H", body[at:at + 2])[0]
    at += 2
    while at + 4 <= end:
        kind, length = struct.unpack("!HH", body[at:at + 4])
        value = body[at + 4:at + 4 + length]
        if kind == 16:
            names, i = [], 2
            while i < len(value):
                names.append(value[i + 1:i + 1 + value[i]].decode("ascii", "replace"))
                i += 1 + value[i]
            return names
        at += 4 + length
    return []


def main():
    path, minimum = sys.argv[1], int(sys.argv[2])
    alpn = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--alpn" else None
    starts, pieces = {}, {}
    for key, seq, syn, payload in tcp_segments(path):
        if syn:
            starts[key] = (seq + 1) & 0xFFFFFFFF
        if payload:
            pieces.setdefault(key, {}).setdefault(seq, payload)
    checked, failures, hellos = 0, [], 0
    for key, start in starts.items():
        stream, at = b"", 0
        for seq, payload in sorted(pieces.get(key, {}).items(), key=lambda item: (item[0] - start) & 0xFFFFFFFF):
            offset = (seq - start) & 0xFFFFFFFF
            if offset > len(stream):
                break  # a gap in the capture: check what came before it
            stream += payload[len(stream) - offset:]
        if not stream:
            continue
        checked += 1
        name = f"{'.'.join(map(str, key[0])) if len(key[0]) == 4 else key[0].hex()}:{key[1]} -> {key[3]}"
        while at + 5 <= len(stream):
            kind, major, _minor, length = stream[at], stream[at + 1], stream[at + 2], struct.unpack("!H", stream[at + 3:at + 5])[0]
            if kind not in (20, 21, 22, 23) or major != 3 or length > 16384 + 256:
                failures.append(f"{name}: not a TLS record at byte {at}: {stream[at:at + 16]!r}")
                break
            if kind == 22 and at == 0 and alpn is not None:
                offered = client_hello_alpn(stream[5:5 + length])
                if offered is not None:
                    hellos += 1
                    if alpn not in offered:
                        failures.append(f"{name}: the ClientHello offers ALPN {offered}, not {alpn}")
            at += 5 + length
    for failure in failures:
        print("  " + failure)
    if checked < minimum:
        print(f"  {checked} connection(s) checked from their first byte, expected at least {minimum}")
    if alpn is not None and hellos == 0:
        print("  no ClientHello in the capture")
    sys.exit(1 if failures or checked < minimum or (alpn is not None and hellos == 0) else 0)


main()
