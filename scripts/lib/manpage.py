#!/usr/bin/env python3
"""Writes a man page (man(7) macros) for one NetExt command from its own description of itself.

Usage: BINARY --experimental-dump-help | manpage.py SECTION DATE VERSION > NAME.SECTION

The command's JSON (swift-argument-parser's help dump: commandName, abstract, discussion,
arguments with names/valueName/defaultValue, subcommands) becomes NAME, SYNOPSIS, DESCRIPTION,
OPTIONS and one COMMANDS entry per subcommand (nested ones by their full name), then FILES and
SEE ALSO for the commands NetExt installs. Hidden arguments and commands are left out.
"""
import json
import sys

SEE_ALSO = {
    "netext": ["netextd(8)", "netext-server(8)", "netext-urlfilter-db(1)"],
    "netextd": ["netext(1)", "netext-server(8)", "systemctl(1)"],
    "netext-server": ["netext(1)", "netextd(8)", "netext-urlfilter-db(1)", "systemctl(1)"],
    "netext-urlfilter-db": ["netext(1)", "netext-server(8)"],
}
FILES = {
    "netext": [("/run/netext/netextd.sock", "netextd's control socket ($NETEXT_SOCKET)")],
    "netextd": [
        ("/var/lib/netext", "configurations (SQLite) and secrets ($NETEXT_STATE_DIR)"),
        ("/etc/netext/providers", "provider manifests, one JSON file each ($NETEXT_PROVIDERS_DIR)"),
        ("/run/netext/netextd.sock", "the control socket ($NETEXT_SOCKET)"),
    ],
    "netext-server": [
        ("/etc/netext/tunnel-server.json", "the tunnel server's configuration"),
        ("/etc/netext/server/ROLE.env", "options of the HTTP roles' units"),
        ("/run/netext-server/tunnel-PORT.sock", "the tunnel server's status socket"),
    ],
}


def escape(text):
    """Text as roff reads it: backslashes doubled, a leading dot or quote protected."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    # Characters beyond ASCII as groff's Unicode escapes (man reads pages as ASCII or Latin-1).
    text = "".join(c if ord(c) < 128 else "\\[u{:04X}]".format(ord(c)) for c in text)
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def flag_names(argument):
    names = []
    for name in argument.get("names", []):
        if name["kind"] == "short":
            names.append("-" + name["name"])
        elif name["kind"] == "longWithSingleDash":
            names.append("-" + name["name"])
        else:
            names.append("--" + name["name"])
    return names


def describe_argument(argument):
    """.TP entry: the option's spelling (bold names, italic value), then its help."""
    value = argument.get("valueName", "value").upper()
    if argument["kind"] == "positional":
        head = "\\fI" + escape(value) + "\\fR" + (" ..." if argument.get("isRepeating") else "")
    else:
        names = ", ".join("\\fB" + escape(n) + "\\fR" for n in flag_names(argument))
        head = names + (" \\fI" + escape(value) + "\\fR" if argument["kind"] == "option" else "")
    body = escape(argument.get("abstract", ""))
    if argument.get("discussion"):
        body += " " + escape(argument["discussion"])
    if argument.get("defaultValue") not in (None, ""):
        body += " (default: " + escape(str(argument["defaultValue"])) + ")"
    if argument.get("allValues"):
        body += " One of: " + escape(", ".join(argument["allValues"])) + "."
    return ".TP\n" + head + "\n" + body + "\n"


def visible(arguments):
    return [a for a in arguments or [] if a.get("shouldDisplay", True)]


def synopsis(path, command):
    parts = ["\\fB" + escape(" ".join(path)) + "\\fR"]
    for argument in visible(command.get("arguments")):
        if argument["kind"] == "positional":
            text = "\\fI" + escape(argument.get("valueName", "value").upper()) + "\\fR"
            if argument.get("isRepeating"):
                text += " ..."
            parts.append("[" + text + "]" if argument.get("isOptional") else text)
    if any(a["kind"] != "positional" for a in visible(command.get("arguments"))):
        parts.append("[\\fIOPTIONS\\fR]")
    return " ".join(parts)


def commands_section(path, command, out):
    for sub in command.get("subcommands", []) or []:
        if not sub.get("shouldDisplay", True):
            continue
        full = path + [sub["commandName"]]
        out.append(".SS " + escape(" ".join(full)) + "\n")
        out.append(synopsis(full, sub) + "\n.br\n")
        out.append(escape(sub.get("abstract", "")) + "\n")
        if sub.get("discussion"):
            out.append(".PP\n" + escape(sub["discussion"]) + "\n")
        arguments = [a for a in visible(sub.get("arguments")) if flag_names(a) not in (["--help", "-h"], ["-h", "--help"], ["--version"])]
        if arguments:
            out.append(".RS\n" + "".join(describe_argument(a) for a in arguments) + ".RE\n")
        commands_section(full, sub, out)


def main():
    section, date, version = sys.argv[1], sys.argv[2], sys.argv[3]
    command = json.load(sys.stdin)["command"]
    name = command["commandName"]
    out = [
        '.TH "{}" "{}" "{}" "NetExt {}" "NetExt"\n'.format(escape(name.upper()), section, date, version),
        ".SH NAME\n{} \\- {}\n".format(escape(name), escape(command.get("abstract", ""))),
        ".SH SYNOPSIS\n" + synopsis([name], command) + ("\n.br\n\\fB" + escape(name) + "\\fR \\fICOMMAND\\fR ..." if command.get("subcommands") else "") + "\n",
    ]
    if command.get("discussion"):
        out.append(".SH DESCRIPTION\n" + escape(command["discussion"]) + "\n")
    arguments = visible(command.get("arguments"))
    if arguments:
        out.append(".SH OPTIONS\n" + "".join(describe_argument(a) for a in arguments))
    if command.get("subcommands"):
        out.append(".SH COMMANDS\n")
        if command.get("defaultSubcommand"):
            out.append("Without a command, \\fB{}\\fR runs \\fB{}\\fR.\n".format(escape(name), escape(command["defaultSubcommand"])))
        commands_section([name], command, out)
    if name in FILES:
        out.append(".SH FILES\n" + "".join(".TP\n\\fI{}\\fR\n{}\n".format(escape(p), escape(d)) for p, d in FILES[name]))
    out.append(".SH SEE ALSO\n" + ", ".join("\\fB{}\\fR({})".format(escape(s.split("(")[0]), s.split("(")[1].rstrip(")")) for s in SEE_ALSO.get(name, [])) + "\n")
    out.append(".PP\nThe documentation in /usr/share/doc/netext.\n")
    sys.stdout.write("".join(out))


main()
