#!/usr/bin/env python3
"""Sends a UDP datagram to HOST:PORT and waits (at most 1.5 s) for the echo, up to TRIES times
(default 1) on the same socket, as a program that retries would.
Exit 0 when the echo came back. Usage: udp-probe.py HOST PORT [PAYLOAD [TRIES]]"""
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
payload = (sys.argv[3] if len(sys.argv) > 3 else "netext filter probe").encode()
tries = int(sys.argv[4]) if len(sys.argv) > 4 else 1
family = socket.AF_INET6 if ":" in host else socket.AF_INET
sock = socket.socket(family, socket.SOCK_DGRAM)
sock.settimeout(1.5)
for _ in range(tries):
    try:
        sock.sendto(payload, (host, port))
        data, _ = sock.recvfrom(2048)
        sys.exit(0 if data == payload else 2)
    except socket.timeout:
        continue
    except PermissionError:
        # The filter's kernel rule refused the datagram as it left.
        sys.exit(1)
sys.exit(1)
