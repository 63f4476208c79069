#!/usr/bin/env python3
"""Stands in for systemd's notification socket (sd_notify(3)) in lab scripts.

Usage: notify-receiver.py SOCKET_PATH LOG_FILE [SECONDS]
Binds an AF_UNIX datagram socket at SOCKET_PATH and appends each notification to LOG_FILE as
one line, its assignments joined by ' | ' (e.g. 'READY=1 | STATUS=serving on 127.0.0.1:8080').
Exits after SECONDS (default 600) so a lab never leaves it behind.
"""
import os
import socket
import sys
import time

path, log = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + float(sys.argv[3] if len(sys.argv) > 3 else 600)
if os.path.exists(path):
    os.unlink(path)
receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
receiver.bind(path)
os.chmod(path, 0o666)
receiver.settimeout(1.0)
try:
    while time.monotonic() < deadline:
        try:
            message = receiver.recv(4096)
        except socket.timeout:
            continue
        with open(log, "a") as out:
            out.write(" | ".join(message.decode("utf-8", "replace").strip().split("\n")) + "\n")
finally:
    os.unlink(path)
