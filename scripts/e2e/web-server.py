#!/usr/bin/env python3
"""The lab's web server: answers HTTP (port 80) and HTTPS (port 443, the given certificate) for
any host name with "hello from HOST PATH", serves /big (N bytes, ?n=) and /files/NAME (from
DIR, 404 if absent), /unsized (no Content-Length, closed after), and echoes UDP on ports 7 and
443. Listens on every address of its namespace (IPv4
and IPv6). Usage: web-server.py CERT KEY LOG [DIR]"""
import socket, ssl, subprocess, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

cert, key, log_path = sys.argv[1], sys.argv[2], sys.argv[3]
files = sys.argv[4] if len(sys.argv) > 4 else None
log = open(log_path, "a", buffering=1)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        url = urlparse(self.path)
        host = self.headers.get("Host", "-")
        log.write(f"{self.server.scheme} {host} {self.path} from {self.client_address[0]}\n")
        if url.path.startswith("/files/") and files:
            name = url.path[len("/files/"):]
            try:
                body = open(f"{files}/{name}", "rb").read() if "/" not in name and name else None
            except OSError:
                body = None
            if body is None:
                self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
            self.send_response(200); self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            return
        if url.path == "/unsized":
            # No length: the answer ends when the server closes the connection.
            self.send_response(200); self.send_header("Content-Type", "text/plain"); self.send_header("Connection", "close")
            self.end_headers(); self.wfile.write(b"an answer without a length\n"); self.close_connection = True
            return
        if url.path == "/big":
            size = int(parse_qs(url.query).get("n", ["1000000"])[0])
            self.send_response(200); self.send_header("Content-Length", str(size)); self.end_headers()
            chunk = b"x" * 65536
            while size > 0:
                self.wfile.write(chunk[:min(size, len(chunk))]); size -= len(chunk)
            return
        body = f"hello from {host} {url.path}\n".encode()
        self.send_response(200); self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass

class DualStackServer(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    context = None
    def handle_error(self, request, client_address):
        pass  # resets of filtered connections are expected here
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
    def finish_request(self, request, client_address):
        # The TLS handshake runs in the connection's own thread, with a timeout, so a client
        # that never finishes it (a filtered flow) cannot stall the server.
        request.settimeout(10)
        if self.context is not None:
            try:
                request = self.context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)

def serve(port, scheme):
    server = DualStackServer(("::", port), Handler)
    server.scheme = scheme
    if scheme == "https":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.context = context
    server.serve_forever()

def udp_echo(address, port):
    # One socket per address, so that each echo leaves from the address the probe was sent to.
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, port))
    while True:
        data, peer = sock.recvfrom(2048)
        log.write(f"udp {len(data)} from {peer[0]} to {address}\n")
        sock.sendto(data, peer)

addresses = [line.split()[3].split("/")[0] for line in
             subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout.splitlines()
             if " scope global" in line or " scope host" in line]
targets = [lambda: serve(80, "http"), lambda: serve(443, "https")]
# UDP echo on port 7 and on 443 (where QUIC goes: the lab's QUIC probes expect their datagram back).
targets += [(lambda a, p: lambda: udp_echo(a, p))(address, port) for address in addresses if not address.startswith("127.") and address != "::1"
            for port in (7, 443)]
for target in targets:
    threading.Thread(target=target, daemon=True).start()
log.write("web server ready\n")
threading.Event().wait()
