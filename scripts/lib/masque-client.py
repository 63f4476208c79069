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
  ip                connect-ip (RFC 9484): only the status is printed.
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

    payload = (args.payload * args.repeat).encode()
    headers = [(":method", "CONNECT")]
    if args.mode == "tcp":
        headers.append((":authority", args.target[0]))
    else:
        path = "/.well-known/masque/udp/%s/%s/" % (args.target[0].replace(":", "%3A"), args.target[1]) if args.mode == "udp" else "/.well-known/masque/ip/*/*/"
        headers += [(":protocol", "connect-udp" if args.mode == "udp" else "connect-ip"), (":scheme", "https"),
                    (":authority", args.relay), (":path", path), ("capsule-protocol", "?1")]
    if args.token:
        headers.append(("proxy-authorization", "Bearer " + args.token))
    stream = connection.get_next_available_stream_id()
    connection.send_headers(stream, headers)
    tls.sendall(connection.data_to_send())

    status, response_headers, received, ended, reset = None, {}, b"", False, None
    sent = False
    while time.monotonic() < deadline and not ended and reset is None:
        for event in events():
            if isinstance(event, h2.events.ResponseReceived):
                response_headers = dict(event.headers)
                status = response_headers.get(":status")
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
