#!/usr/bin/env python3
"""Sends one UDP datagram to HOST:PORT and waits (at most 1.5 s) for the echo.
Exit 0 when the echo came back. Usage: udp-probe.py HOST PORT [PAYLOAD]"""
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
payload = (sys.argv[3] if len(sys.argv) > 3 else "netext filter probe").encode()
family = socket.AF_INET6 if ":" in host else socket.AF_INET
sock = socket.socket(family, socket.SOCK_DGRAM)
sock.settimeout(1.5)
try:
    sock.sendto(payload, (host, port))
    data, _ = sock.recvfrom(2048)
except (socket.timeout, PermissionError):
    # (PermissionError: the filter's kernel rule refused the datagram as it left)
    sys.exit(1)
sys.exit(0 if data == payload else 2)
