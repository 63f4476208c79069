#!/usr/bin/env python3
"""Per-query time of PIR servers, alternating between them in one period: for each server, a
query body recorded with `netext-urlfilter-db query --record-requests DIR` (its evaluation key
uploaded first) is sent back to back on one connection, ROUNDS times COUNT queries, the servers
taking turns each round. Prints key=value lines: each server's median and p90 over all its
queries, and the first server's median over each other's. Only loopback servers are contacted.

Usage: pir-latency.py --count N --rounds R NAME=HOST:PORT:DIR [NAME=HOST:PORT:DIR ...]
"""
import argparse, http.client, os, statistics, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pir_recorded import load, one_query

USER_AGENT = "NetExt/1.0 (Linux; compatible; iOS/26.4)"  # Apple's service refuses requests without one

class Server:
    def __init__(self, spec):
        name, _, rest = spec.partition("=")
        host, port, directory = rest.split(":", 2)
        if host not in ("127.0.0.1", "::1", "localhost"):
            sys.exit(f"pir-latency: {host} is not loopback")
        self.name, self.host, self.port = name, host, int(port)
        self.user, self.key, queries = load(directory, "pir-latency")
        self.query = one_query(queries)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        self.times = []

    def post(self, path, body):
        self.connection.request("POST", path, body=body, headers={
            "Content-Type": "application/octet-stream", "User-Identifier": self.user, "User-Agent": USER_AGENT})
        response = self.connection.getresponse()
        response.read()
        if response.status != 200:
            sys.exit(f"pir-latency: {self.name} answered {path} with {response.status}")

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("servers", nargs="+")
    args = parser.parse_args()
    if not (1 <= args.count <= 1000 and 1 <= args.rounds <= 50):
        sys.exit("pir-latency: --count 1..1000, --rounds 1..50")
    servers = [Server(spec) for spec in args.servers]
    for server in servers:
        server.post("/key", server.key)
        server.post("/queries", server.query)  # warm-up, not counted
    for _ in range(args.rounds):
        for server in servers:
            for _ in range(args.count):
                began = time.perf_counter()
                server.post("/queries", server.query)
                server.times.append(time.perf_counter() - began)
    for server in servers:
        ordered = sorted(server.times)
        print(f"{server.name}_queries={len(ordered)}")
        print(f"{server.name}_median_ms={statistics.median(ordered) * 1000:.1f}")
        print(f"{server.name}_p90_ms={ordered[int(len(ordered) * 0.9)] * 1000:.1f}")
    first = servers[0]
    for other in servers[1:]:
        print(f"{first.name}_median_over_{other.name}={statistics.median(first.times) / statistics.median(other.times):.2f}")

main()
