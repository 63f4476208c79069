#!/usr/bin/env python3
"""Loads a PIR server the way an unfair client could (issue 26, item 7), by replaying request
bodies recorded with `netext-urlfilter-db query --record-requests DIR`.

Modes (each prints key=value lines):
  fairness  a polite client (--polite connections, one-query messages, back to back) alone for
            --seconds, then again while --flooders connections send 64-query messages; prints the
            polite client's requests/s and p50/p99 latency in both phases and the flood's answers
  keys      uploads the recorded key under --count fresh user identifiers, then asks one query with
            the recorded client's own identifier: 200 means its key survived, 409 that it was pushed out

A /queries body is a protobuf `Requests` message whose only field is `repeated Request requests = 1`
(Apple's pir.proto), so 64 copies of a one-query body make a valid 64-query body.
Only the loopback server given with --server is contacted.
"""
import argparse, http.client, os, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pir_recorded import one_query
from pir_recorded import load as load_recorded

def load(directory):
    return load_recorded(directory, "pir-flood")

class Client:
    def __init__(self, host, port, user):
        self.host, self.port, self.user = host, port, user
        self.connection = None

    def post(self, path, body, user=None):
        for attempt in (1, 2):
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
                self.connection.request("POST", path, body=body, headers={
                    "Content-Type": "application/x-protobuf", "User-Identifier": user or self.user})
                response = self.connection.getresponse()
                response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.connection.close(); self.connection = None
                return response.status
            except (OSError, http.client.HTTPException):
                if self.connection:
                    self.connection.close()
                self.connection = None
                if attempt == 2:
                    return 0

def percentile(values, fraction):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]

def polite_phase(args, user, body, seconds, stop_flood=None):
    latencies, statuses, lock = [], {}, threading.Lock()
    deadline = time.monotonic() + seconds
    def polite():
        client = Client(args.host, args.port, user)
        while time.monotonic() < deadline:
            began = time.monotonic()
            status = client.post("/queries", body)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    latencies.append(time.monotonic() - began)
    threads = [threading.Thread(target=polite) for _ in range(args.polite)]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    return latencies, statuses

def fairness(args, user, key, queries):
    single = one_query(queries)
    big = single * 64
    Client(args.host, args.port, user).post("/key", key)
    latencies, statuses = polite_phase(args, user, single, args.seconds)
    print(f"alone_polite_req_per_s={len(latencies) / args.seconds:.1f}")
    print(f"alone_polite_p50_ms={percentile(latencies, 0.5) * 1000:.1f}")
    print(f"alone_polite_p99_ms={percentile(latencies, 0.99) * 1000:.1f}")
    stop = threading.Event()
    flood_statuses, lock = {}, threading.Lock()
    def flooder():
        client = Client(args.host, args.port, user)
        while not stop.is_set():
            status = client.post("/queries", big)
            with lock:
                flood_statuses[status] = flood_statuses.get(status, 0) + 1
            if status == 503:
                time.sleep(0.05)
    flooders = [threading.Thread(target=flooder) for _ in range(args.flooders)]
    for thread in flooders: thread.start()
    time.sleep(1)
    latencies, statuses = polite_phase(args, user, single, args.seconds)
    stop.set()
    for thread in flooders: thread.join()
    print(f"flooded_polite_req_per_s={len(latencies) / args.seconds:.1f}")
    print(f"flooded_polite_p50_ms={percentile(latencies, 0.5) * 1000:.1f}")
    print(f"flooded_polite_p99_ms={percentile(latencies, 0.99) * 1000:.1f}")
    print(f"flooded_polite_refused={sum(count for status, count in statuses.items() if status != 200)}")
    print(f"flood_messages_answered={flood_statuses.get(200, 0)}")
    print(f"flood_messages_refused_503={flood_statuses.get(503, 0)}")

def keys(args, user, key, queries):
    client = Client(args.host, args.port, user)
    client.post("/key", key)
    print(f"key_flood_victim_status_before={client.post('/queries', one_query(queries))}")
    began = time.monotonic()
    accepted = sum(1 for index in range(args.count) if client.post("/key", key, user=f"pir-flood-{index}") == 200)
    print(f"key_flood_uploads_accepted={accepted}")
    print(f"key_flood_seconds={time.monotonic() - began:.1f}")
    print(f"key_flood_victim_query_status={client.post('/queries', one_query(queries))}")

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["fairness", "keys"])
    parser.add_argument("--server", required=True, help="HOST:PORT on loopback")
    parser.add_argument("--recorded", required=True, help="the directory given to --record-requests")
    parser.add_argument("--polite", type=int, default=2)
    parser.add_argument("--flooders", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--count", type=int, default=400)
    args = parser.parse_args()
    args.host, _, port = args.server.rpartition(":")
    args.port = int(port)
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        sys.exit("pir-flood: only a loopback server may be loaded")
    user, key, queries = load(args.recorded)
    (fairness if args.mode == "fairness" else keys)(args, user, key, queries)

if __name__ == "__main__":
    main()
