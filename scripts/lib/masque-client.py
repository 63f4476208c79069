#!/usr/bin/python3
"""A tiny MASQUE client on Debian's python3-h2 (not NetExt's code): the relay's test peer.

Opens one TLS connection (ALPN h2) to the relay, waits for its SETTINGS (extended CONNECT needs
SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 8441 section 3), sends one request and prints what came
back, one "key=value" a line:
  tcp TARGET        CONNECT (RFC 9113 section 8.5) to TARGET (host:port); sends --payload,
                    reads until as many bytes came back, ends its side, waits for the end.
  udp HOST PORT     connect-udp (RFC 9298): the target in :path, one DATAGRAM capsule (type 0,
                    context ID 0, RFC 9297 section 3.5) with --payload (or --raw bytes, in hex);
                    prints the first datagram back, or the stream's reset.
  ip [TARGET PROTO] connect-ip (RFC 9484), scope TARGET and PROTO in :path (default * and *):
                    prints the addresses the relay assigned and the routes it advertised (RFC 9484
                    section 4.7); with --request [4|6], sends an ADDRESS_REQUEST (ID 7) and prints
                    the answer; with --ping ADDR, sends ICMP echo requests from the assigned IPv4 address
                    in DATAGRAM capsules and prints "ping=ok" when a reply from ADDR comes back
                    (--spoof first sends one from another source, which the relay must drop).
Usage: masque-client.py RELAY_HOST:PORT CA_FILE MODE ... [--token T] [--payload TEXT] [--repeat N]
"""
import argparse
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events


def varint(value):
    if value < 64:
        return bytes([value])
    if value < 16384:
        return (0x4000 | value).to_bytes(2, "big")
    if value < 1 << 30:
        return (0x80000000 | value).to_bytes(4, "big")
    return (0xC000000000000000 | value).to_bytes(8, "big")


def read_varint(data, offset):
    if offset >= len(data):
        return None, offset
    length = 1 << (data[offset] >> 6)
    if offset + length > len(data):
        return None, offset
    value = data[offset] & 0x3F
    for byte in data[offset + 1:offset + length]:
        value = value << 8 | byte
    return value, offset + length


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def icmp_echo(source, destination, sequence, payload=b"netext connect-ip"):
    """An IPv4 packet (RFC 791) holding an ICMP echo request (RFC 792), checksums filled in."""
    icmp = bytes([8, 0, 0, 0]) + (0x4E58).to_bytes(2, "big") + sequence.to_bytes(2, "big") + payload
    icmp = icmp[:2] + checksum(icmp).to_bytes(2, "big") + icmp[4:]
    header = bytes([0x45, 0]) + (20 + len(icmp)).to_bytes(2, "big") + bytes([0, 0, 0x40, 0, 64, 1, 0, 0]) + source + destination
    header = header[:10] + checksum(header).to_bytes(2, "big") + header[12:]
    return header + icmp


def capsules(data):
    """The whole capsules at the start of data as (type, value) pairs, and the bytes left over."""
    found, at = [], 0
    while True:
        kind, next_at = read_varint(data, at)
        if kind is None:
            break
        length, value_at = read_varint(data, next_at)
        if length is None or value_at + length > len(data):
            break
        found.append((kind, data[value_at:value_at + length]))
        at = value_at + length
    return found, data[at:]


def addresses(value):
    """ADDRESS_ASSIGN entries (RFC 9484 section 4.7.1): request ID, version, address, length."""
    entries, at = [], 0
    while at < len(value):
        request, at = read_varint(value, at)
        size = 4 if value[at] == 4 else 16
        address = socket.inet_ntop(socket.AF_INET if size == 4 else socket.AF_INET6, value[at + 1:at + 1 + size])
        entries.append((request, address, value[at + 1 + size]))
        at += 2 + size
    return entries


def routes(value):
    """ROUTE_ADVERTISEMENT ranges (RFC 9484 section 4.7.3)."""
    found, at = [], 0
    while at < len(value):
        family, size = (socket.AF_INET, 4) if value[at] == 4 else (socket.AF_INET6, 16)
        start = socket.inet_ntop(family, value[at + 1:at + 1 + size])
        end = socket.inet_ntop(family, value[at + 1 + size:at + 1 + 2 * size])
        found.append("%s-%s/%d" % (start, end, value[at + 1 + 2 * size]))
        at += 2 + 2 * size
    return found


def connect_ip(args, connection, tls, stream, events, deadline, received):
    """After the 200: reads the opening capsules, asks, pings; prints what happened."""
    buffered, assigned, advertised, answers, replies = b"", [], None, [], 0

    def send(body):
        connection.send_data(stream, body)
        tls.sendall(connection.data_to_send())

    def pump():
        nonlocal buffered
        try:
            found = events()
        except socket.timeout:
            return take()
        for event in found:
            if isinstance(event, h2.events.DataReceived):
                buffered += event.data
                connection.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                print("ended=yes")
                return False
        pending = connection.data_to_send()
        if pending:
            tls.sendall(pending)
        return take()

    def take():
        nonlocal buffered, assigned, advertised, replies
        found, buffered = capsules(buffered)
        for kind, value in found:
            if kind == 1:
                assigned = addresses(value)
                answers.append(assigned)
            elif kind == 3:
                advertised = routes(value)
            elif kind == 0 and value[:1] == b"\0":
                packet = value[1:]
                # An ICMP echo reply (type 0) from the pinged address.
                if len(packet) >= 28 and packet[0] >> 4 == 4 and packet[9] == 1 and packet[20] == 0 \
                        and args.ping and packet[12:16] == socket.inet_aton(args.ping):
                    replies += 1
        return True

    buffered = received
    tls.settimeout(1)
    take()
    while time.monotonic() < deadline and (not assigned or advertised is None):
        if not pump():
            return
    for request, address, length in assigned:
        print("assigned=%s/%d request=%d" % (address, length, request))
    print("routes=%s" % ",".join(advertised or []))
    if args.request:
        # ADDRESS_REQUEST: ID 7, the family asked, any address (all zeros), the full length.
        size = 4 if args.request == "4" else 16
        body = varint(7) + bytes([int(args.request)]) + bytes(size) + bytes([size * 8])
        send(varint(2) + varint(len(body)) + body)
        before = len(answers)
        while time.monotonic() < deadline and len(answers) == before:
            if not pump():
                return
        for request, address, length in answers[-1]:
            print("answered=%s/%d request=%d" % (address, length, request))
    if args.ping:
        mine = [address for _, address, length in assigned if ":" not in address]
        if not mine:
            print("ping=no-ipv4-address")
            return
        source, destination = socket.inet_aton(mine[0]), socket.inet_aton(args.ping)
        if args.spoof:
            packet = icmp_echo(socket.inet_aton("192.0.2.99"), destination, 99)
            send(varint(0) + varint(len(packet) + 1) + varint(0) + packet)
        for sequence in range(1, args.count + 1):
            packet = icmp_echo(source, destination, sequence)
            send(varint(0) + varint(len(packet) + 1) + varint(0) + packet)
        wait_until = min(deadline, time.monotonic() + 5)
        while time.monotonic() < wait_until and replies < args.count:
            if not pump():
                break
        print("replies=%d" % replies)
        print("ping=%s" % ("ok" if replies == args.count else "fail"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("relay")
    parser.add_argument("ca")
    parser.add_argument("mode", choices=["tcp", "udp", "ip"])
    parser.add_argument("target", nargs="*")
    parser.add_argument("--token")
    parser.add_argument("--payload", default="hello")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--raw", help="udp: send these bytes (hex) instead of a DATAGRAM capsule")
    parser.add_argument("--ping", help="ip: ping this IPv4 address through the tunnel")
    parser.add_argument("--count", type=int, default=3, help="ip: how many echo requests")
    parser.add_argument("--spoof", action="store_true", help="ip: first send an echo request from a source not assigned")
    parser.add_argument("--request", nargs="?", const="4", choices=["4", "6"], help="ip: send an ADDRESS_REQUEST for IPv4 (or 6)")
    args = parser.parse_args()
    host, port = args.relay.rsplit(":", 1)
    context = ssl.create_default_context(cafile=args.ca)
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection((host, int(port)), timeout=10)
    tls = context.wrap_socket(raw, server_hostname=host)
    if tls.selected_alpn_protocol() != "h2":
        print("alpn=%s" % tls.selected_alpn_protocol())
        return 1
    # python3-h2 4.1 insists on :path for every request, also a plain CONNECT (which RFC 9113
    # section 8.5 forbids to carry one): its check of outgoing headers is off.
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(
        client_side=True, header_encoding="utf-8", validate_outbound_headers=False))
    connection.initiate_connection()
    tls.sendall(connection.data_to_send())

    def events():
        data = tls.recv(65536)
        if not data:
            raise EOFError("the relay closed the connection")
        found = connection.receive_data(data)
        pending = connection.data_to_send()
        if pending:
            tls.sendall(pending)
        return found

    deadline = time.monotonic() + 10
    settled = False
    while not settled and time.monotonic() < deadline:
        settled = any(isinstance(event, h2.events.RemoteSettingsChanged) for event in events())

    print("max_streams=%d" % connection.remote_settings.max_concurrent_streams)
    payload = (args.payload * args.repeat).encode()
    headers = [(":method", "CONNECT")]
    if args.mode == "tcp":
        headers.append((":authority", args.target[0]))
    else:
        if args.mode == "udp":
            path = "/.well-known/masque/udp/%s/%s/" % (args.target[0].replace(":", "%3A"), args.target[1])
        else:
            scope = args.target or ["*", "*"]
            path = "/.well-known/masque/ip/%s/%s/" % (scope[0].replace(":", "%3A").replace("/", "%2F"), scope[1])
        headers += [(":protocol", "connect-udp" if args.mode == "udp" else "connect-ip"), (":scheme", "https"),
                    (":authority", args.relay), (":path", path), ("capsule-protocol", "?1")]
    if args.token:
        headers.append(("proxy-authorization", "Bearer " + args.token))
    stream = connection.get_next_available_stream_id()
    connection.send_headers(stream, headers)
    tls.sendall(connection.data_to_send())

    status, response_headers, received, ended, reset = None, {}, b"", False, None
    sent, ip_ready = False, False
    while time.monotonic() < deadline and not ended and reset is None:
        for event in events():
            if isinstance(event, h2.events.ResponseReceived):
                response_headers = dict(event.headers)
                status = response_headers.get(":status")
                ip_ready = status == "200" and args.mode == "ip"
                if status == "200" and args.mode != "ip" and not sent:
                    sent = True
                    body = payload if args.mode == "tcp" else varint(0) + varint(len(payload) + 1) + varint(0) + payload
                    if args.raw:
                        body = bytes.fromhex(args.raw)
                    # Respect the stream's flow-control window.
                    offset = 0
                    while offset < len(body):
                        window = min(connection.local_flow_control_window(stream), connection.max_outbound_frame_size)
                        if window <= 0:
                            for later in events():
                                if isinstance(later, h2.events.DataReceived):
                                    received += later.data
                                    connection.acknowledge_received_data(later.flow_controlled_length, stream)
                            continue
                        connection.send_data(stream, body[offset:offset + window])
                        offset += window
                        tls.sendall(connection.data_to_send())
            elif isinstance(event, h2.events.DataReceived):
                received += event.data
                connection.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, h2.events.StreamEnded):
                ended = True
            elif isinstance(event, h2.events.StreamReset):
                reset = event.error_code
        pending = connection.data_to_send()
        if pending:
            tls.sendall(pending)
        if ip_ready:
            print("status=200")
            print("capsule-protocol=%s" % response_headers.get("capsule-protocol"))
            connect_ip(args, connection, tls, stream, events, deadline, received)
            tls.close()
            return 0
        if args.mode == "tcp" and sent and len(received) >= len(payload) and not ended:
            connection.end_stream(stream)
            tls.sendall(connection.data_to_send())
        if args.mode == "udp" and sent and received:
            value_type, at = read_varint(received, 0)
            length, at = read_varint(received, at)
            if length is not None and len(received) >= at + length:
                break
        if status is not None and status != "200":
            break

    print("status=%s" % status)
    for name in ("proxy-status", "capsule-protocol", "proxy-authenticate"):
        if name in response_headers:
            print("%s=%s" % (name, response_headers[name]))
    if args.mode == "tcp":
        print("echoed=%s" % ("yes" if received == payload else "no (%d of %d bytes)" % (len(received), len(payload))))
        print("ended=%s" % ("yes" if ended else "no"))
    elif args.mode == "udp" and received:
        value_type, at = read_varint(received, 0)
        length, at = read_varint(received, at)
        context_id, inner = read_varint(received, at)
        datagram = received[inner:at + length]
        print("capsule_type=%d context=%d datagram=%s" % (value_type, context_id, datagram.decode(errors="replace")))
    if reset is not None:
        print("reset=%d" % reset)
    tls.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
