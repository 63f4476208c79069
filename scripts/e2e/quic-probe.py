#!/usr/bin/env python3
"""Sends a QUIC version 1 client Initial packet to HOST:443 — the protected packet of RFC 9001
Appendix A.2, whose ClientHello names example.com — and waits (at most 1.5 s) for the lab's UDP
echo. Exit 0 when it came back. Usage: quic-probe.py HOST"""
import json, os, socket, sys
vector = os.path.join(os.path.dirname(__file__), "../../Tests/Fixtures/vectors/rfc9001-quic-client-initial.json")
packet = bytes.fromhex(json.load(open(vector))["packet"])
host = sys.argv[1]
sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(1.5)
try:
    sock.sendto(packet, (host, 443))
    data, _ = sock.recvfrom(2048)
except (socket.timeout, PermissionError):
    sys.exit(1)
sys.exit(0 if data == packet else 2)
