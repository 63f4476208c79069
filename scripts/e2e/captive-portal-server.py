#!/usr/bin/env python3
"""The lab's captive portal, run in the hotspot router's namespace (the lab's "internet").

Until a client logs in, the router's nftables (table TABLE, set `allowed`) send its port-80
traffic here and drop the rest of what it forwards. This server answers:
  http://ADDRESS:8080/ANY     302 to https://ADDRESS:8443/login (what a connectivity check meets)
  https://ADDRESS:8443/capport   the captive portal API (RFC 8908 §5, application/captive+json)
  https://ADDRESS:8443/login  GET: the form; POST user=guest&password=PASSWORD: the client's
                              address joins `allowed` for SESSION seconds (the nft timeout ends it;
                              a `seconds` field asks for another length, at most 600)
  https://ADDRESS:8443/logout POST: the client's session ends at once
  https://ADDRESS:8443/venue  a page about the venue
Usage: captive-portal-server.py ADDRESS CERT KEY TABLE PASSWORD SESSION LOG"""
import json, ssl, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

address, cert, key, table, password, session, log_path = sys.argv[1:8]
session = int(session)
log = open(log_path, "a", buffering=1)
portal = f"https://{address}:8443"
sessions = {}  # client address -> when its session ends (time.time())
lock = threading.Lock()

def remaining(client):
    with lock:
        ends = sessions.get(client)
    return None if ends is None or ends <= time.time() else int(ends - time.time())

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, content_type="text/plain", headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "private, no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        client = self.client_address[0]
        log.write(f"{self.server.scheme} GET {self.headers.get('Host', '-')} {self.path} from {client}\n")
        if self.server.scheme == "http":
            self.reply(302, "log in first\n", headers=[("Location", f"{portal}/login")])
        elif self.path == "/capport":
            left = remaining(client)
            state = {"captive": left is None, "user-portal-url": f"{portal}/login", "venue-info-url": f"{portal}/venue"}
            if left is not None:
                state.update({"seconds-remaining": left, "can-extend-session": True})
            self.reply(200, json.dumps(state), "application/captive+json")
        elif self.path == "/login":
            self.reply(200, "<form method=post><input name=user><input name=password type=password></form>\n", "text/html")
        elif self.path == "/venue":
            self.reply(200, "The NetExt lab cafe\n")
        else:
            self.reply(404, "not here\n")

    def do_POST(self):
        client = self.client_address[0]
        if self.server.scheme == "https" and self.path == "/logout":
            subprocess.run(["nft", "delete", "element", "inet", table, "allowed", f"{{ {client} }}"], capture_output=True)
            with lock:
                sessions.pop(client, None)
            log.write(f"https POST /logout from {client}\n")
            self.reply(200, "bye\n")
            return
        length = min(int(self.headers.get("Content-Length", "0") or 0), 4096)
        form = parse_qs(self.rfile.read(length).decode(errors="replace"))
        ok = self.server.scheme == "https" and self.path == "/login" and form.get("password") == [password] and form.get("user") == ["guest"]
        log.write(f"{self.server.scheme} POST {self.path} from {client}: {'accepted' if ok else 'refused'}\n")
        if not ok:
            self.reply(403, "wrong user or password\n")
            return
        length = session
        if form.get("seconds", [""])[0].isdigit():
            length = max(1, min(int(form["seconds"][0]), 600))
        # A login again renews the session (a hotspot helper's maintain): the element is replaced.
        subprocess.run(["nft", "delete", "element", "inet", table, "allowed", f"{{ {client} }}"], capture_output=True)
        subprocess.run(["nft", "add", "element", "inet", table, "allowed", f"{{ {client} timeout {length}s }}"], check=True)
        with lock:
            sessions[client] = time.time() + length
        self.reply(200, f"welcome; your session lasts {length} s\n")

    def log_message(self, *args):
        pass

def make(port, scheme):
    server = ThreadingHTTPServer((address, port), Handler)
    server.scheme = scheme
    if scheme == "https":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server

plain, secure = make(8080, "http"), make(8443, "https")
threading.Thread(target=plain.serve_forever, daemon=True).start()
log.write("portal ready\n")
secure.serve_forever()
