#!/usr/bin/env python3
"""Prints the width, height and the number of pixels of colour R G B in a PNG (8-bit RGB or
RGBA, not interlaced), decoded with zlib alone (PNG: RFC 2083 / ISO 15948).
Usage: png-colors.py FILE R G B"""
import struct, sys, zlib

path, target = sys.argv[1], tuple(int(v) for v in sys.argv[2:5])
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG")
offset, chunks, header = 8, [], None
while offset < len(data):
    length, kind = struct.unpack(">I4s", data[offset:offset + 8])
    body = data[offset + 8:offset + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        chunks.append(body)
    offset += 12 + length
width, height, depth, colour, _, _, interlace = header
if depth != 8 or colour not in (2, 6) or interlace:
    sys.exit(f"unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
channels = 3 if colour == 2 else 4
raw = zlib.decompress(b"".join(chunks))
stride = width * channels
previous, count, position = bytearray(stride), 0, 0
for _ in range(height):
    kind, line = raw[position], bytearray(raw[position + 1:position + 1 + stride])
    position += 1 + stride
    for i in range(stride):
        left = line[i - channels] if i >= channels else 0
        up, corner = previous[i], previous[i - channels] if i >= channels else 0
        if kind == 1: line[i] = (line[i] + left) & 0xff
        elif kind == 2: line[i] = (line[i] + up) & 0xff
        elif kind == 3: line[i] = (line[i] + (left + up) // 2) & 0xff
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xff
    for i in range(0, stride, channels):
        if tuple(line[i:i + 3]) == target:
            count += 1
    previous = line
print(width, height, count)
