#!/usr/bin/env python3
"""Answers Router Solicitations on one interface with Router Advertisements carrying the
Captive-Portal option (RFC 8910 §2.3, type 37), which Debian 12's radvd 2.19 cannot send.
Lab use only: it runs inside a test's namespace and stops after --seconds.

Usage: ra-responder.py IFACE URI [--forged URI] [--seconds N] [--unsolicited-after N] [--rdnss ADDRESS]
  --forged URI  before each real answer, send one with hop limit 64 naming URI: a receiver
                that checks RFC 4861 §6.1.2 (hop limit 255) must ignore it.
  --unsolicited-after N  also send one advertisement nobody asked for, to all nodes (ff02::1,
                as RFC 4861 §6.2.4's periodic ones go), N seconds after starting.
  --rdnss ADDRESS  also name ADDRESS as a DNS server (RFC 8106 §5.1 option 25, lifetime 600 s).
Each advertisement: hop limit 255, router lifetime 0 (not a default router), no prefixes.
"""
import select
import socket
import struct
import sys
import time


def advertisement(uri, rdnss=None):
    # RFC 4861 §4.2: type, code, checksum (the kernel's), cur hop limit, flags, router lifetime,
    # reachable time, retrans timer; then the option, padded with NULs to 8-byte units.
    body = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 0, 0, 0)
    data = uri.encode()
    units = (2 + len(data) + 7) // 8
    body += bytes([37, units]) + data + b"\0" * (units * 8 - 2 - len(data))
    if rdnss:
        # RFC 8106 §5.1: type 25, length 3 (one address), reserved, lifetime, the address.
        body += struct.pack("!BBHI", 25, 3, 0, 600) + socket.inet_pton(socket.AF_INET6, rdnss)
    return body


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    interface, uri = args[0], args[1]
    forged, seconds, unsolicited, rdnss = None, 120.0, None, None
    rest = args[2:]
    while rest:
        flag, value = rest[0], rest[1]
        if flag == "--forged":
            forged = value
        elif flag == "--seconds":
            seconds = float(value)
        elif flag == "--unsolicited-after":
            unsolicited = float(value)
        elif flag == "--rdnss":
            rdnss = value
        else:
            sys.exit(f"unknown option {flag}")
        rest = rest[2:]
    index = socket.if_nametoindex(interface)
    sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, interface.encode())
    # Solicitations go to ff02::2, which a host that does not forward has not joined.
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, socket.inet_pton(socket.AF_INET6, "ff02::2") + struct.pack("@I", index))
    print(f"answering Router Solicitations on {interface}", flush=True)
    started = time.monotonic()
    deadline = started + seconds
    while time.monotonic() < deadline:
        if unsolicited is not None and time.monotonic() - started >= unsolicited:
            unsolicited = None
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
            sock.sendto(advertisement(uri, rdnss), ("ff02::1", 0, 0, index))
            print("unsolicited Router Advertisement sent to ff02::1", flush=True)
        ready, _, _ = select.select([sock], [], [], 0.5)
        if not ready:
            continue
        packet, source = sock.recvfrom(1500)
        if not packet or packet[0] != 133:
            continue
        print(f"Router Solicitation from {source[0]}", flush=True)
        destination = (source[0].split("%")[0], 0, 0, index)
        if forged:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 64)
            sock.sendto(advertisement(forged), destination)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
        sock.sendto(advertisement(uri, rdnss), destination)


if __name__ == "__main__":
    main()
