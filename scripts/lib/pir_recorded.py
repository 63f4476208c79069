"""Request bodies recorded with `netext-urlfilter-db query --record-requests DIR`, shared by the
PIR load and timing tools: the client's user identifier, its evaluation key upload, and its last
/queries body; and one Request cut out of a Requests message."""
import glob, os, sys

def load(directory, tool):
    def body(pattern):
        files = sorted(glob.glob(os.path.join(directory, pattern)))
        if not files:
            sys.exit(f"{tool}: no {pattern} in {directory} (record one with netext-urlfilter-db query --record-requests)")
        with open(files[-1], "rb") as handle:
            return handle.read()
    with open(os.path.join(directory, "user-identifier")) as handle:
        user = handle.read().strip()
    return user, body("*-key.bin"), body("*-queries.bin")

def one_query(body):
    """The first Request of a recorded Requests message, as a message of its own. A /queries body
    is a protobuf `Requests` message whose only field is `repeated Request requests = 1` (Apple's
    pir.proto): field 1, length-delimited."""
    if not body or body[0] != 0x0A:
        sys.exit("the recorded queries body is not a Requests message")
    length, shift, offset = 0, 0, 1
    while True:
        byte = body[offset]; offset += 1
        length |= (byte & 0x7F) << shift; shift += 7
        if byte < 0x80:
            break
    return body[:offset + length]
