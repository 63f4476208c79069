#!/usr/bin/env python3
"""A small HTTP proxy for the labs: CONNECT tunnels (RFC 9110 §9.3.6) and absolute-form
requests (RFC 9112 §3.2.2, relayed on a connection of their own, the answer streamed back until
the origin closes). Logs one line per request to standard output: "CONNECT host:port" or
"GET http://...". With $LAB_PROXY_CREDENTIALS ("user:password") it wants them as Basic
Proxy-Authorization (RFC 9110 §11.7.2, RFC 7617) and answers 407 otherwise, logging
"407 <request line>"; the header is not passed on. Usage: connect-proxy.py ADDRESS PORT"""
import base64
import os
import socket
import sys
import threading


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(client):
    client.settimeout(30)
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 16384:
        chunk = client.recv(4096)
        if not chunk:
            client.close()
            return
        head += chunk
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    method, target, _ = (line.split(" ") + ["", ""])[:3]
    credentials = os.environ.get("LAB_PROXY_CREDENTIALS")
    if credentials:
        expected = b"proxy-authorization: basic " + base64.b64encode(credentials.encode()).lower()
        fields = [l.lower() for l in head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]]
        if expected not in fields:
            print(f"407 {method} {target}", flush=True)
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"lab\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            client.close()
            return
        head = b"\r\n".join(l for l in head.split(b"\r\n") if not l.lower().startswith(b"proxy-authorization:"))
    print(f"{method} {target}", flush=True)
    try:
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
            if rest:
                upstream.sendall(rest)
        elif target.startswith("http://"):
            hostport = target[len("http://"):].split("/", 1)[0]
            host, _, port = hostport.partition(":")
            upstream = socket.create_connection((host, int(port or 80)), timeout=10)
            path = "/" + target[len("http://"):].split("/", 1)[1] if "/" in target[len("http://"):] else "/"
            lines = head.split(b"\r\n")
            lines[0] = f"{method} {path} HTTP/1.1".encode()
            lines = [l for l in lines if not l.lower().startswith(b"connection:")]
            request = b"\r\n".join(lines).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
            upstream.sendall(request)
            pipe(upstream, client)
            upstream.close()
            client.close()
            return
        else:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
    except OSError as error:
        client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nX-Error: {error}\r\n\r\n".encode())
        client.close()
        return
    upstream.settimeout(None)
    client.settimeout(None)
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    pipe(client, upstream)


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((sys.argv[1], int(sys.argv[2])))
    server.listen(64)
    while True:
        client, _ = server.accept()
        threading.Thread(target=handle, args=(client,), daemon=True).start()


main()
