#!/usr/bin/env python3
"""Reads a Prometheus text exposition (format 0.0.4) on standard input and checks it.

    prometheus-sample.py [--check] [NAME{LABELS} OP VALUE ...]

--check: every sample's family has # HELP and # TYPE before it, counters end in _total, and
each histogram has its _sum and _count. Each further argument compares one sample, e.g.
'netext_tunnel_peer_handshakes_total{peer="laptop"}' '>=' 1. Exits 1 naming the first thing
wrong (the samples it saw, for a missing one), 0 when everything holds.
"""
import operator
import re
import sys

OPS = {">": operator.gt, ">=": operator.ge, "==": operator.eq, "<": operator.lt, "<=": operator.le}


def parse(text):
    helps, types, samples = set(), {}, {}
    problems = []
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            helps.add(line.split(" ", 3)[2])
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            types[parts[2]] = parts[3] if len(parts) > 3 else ""
            continue
        if line.startswith("#"):
            continue
        match = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$', line)
        if not match:
            problems.append(f"not a sample line: {line}")
            continue
        name, labels, value = match.group(1), match.group(2) or "", match.group(3)
        try:
            samples[name + labels] = float(value)
        except ValueError:
            problems.append(f"{name}{labels}: value {value!r} is not a number")
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[: -len(suffix)]) in ("histogram", "summary"):
                family = name[: -len(suffix)]
        if family not in types:
            problems.append(f"{name}: no TYPE for {family} before it")
        elif family not in helps:
            problems.append(f"{family}: no HELP")
        elif types[family] == "counter" and not family.endswith("_total"):
            problems.append(f"{family}: a counter's name should end in _total")
    for family, kind in types.items():
        if kind == "histogram" and not any(key.startswith(family + "_count") for key in samples):
            problems.append(f"{family}: a histogram without {family}_count")
    return samples, problems


def main(arguments):
    check = arguments[:1] == ["--check"]
    if check:
        arguments = arguments[1:]
    if len(arguments) % 3:
        sys.exit("usage: prometheus-sample.py [--check] [NAME{LABELS} OP VALUE ...]")
    samples, problems = parse(sys.stdin.read())
    if check and problems:
        print(problems[0], file=sys.stderr)
        return 1
    for index in range(0, len(arguments), 3):
        key, op, expected = arguments[index : index + 3]
        if key not in samples:
            print(f"no sample {key}; saw: {', '.join(sorted(samples)[:40])}", file=sys.stderr)
            return 1
        if not OPS[op](samples[key], float(expected)):
            print(f"{key} is {samples[key]}, wanted {op} {expected}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
