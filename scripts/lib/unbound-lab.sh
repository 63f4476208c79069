# The lab's DNS server: Debian's unbound serving DNS over TLS and over HTTPS (HTTP/2, path
# /dns-query) with the lab CA's certificate for dns.lab.test ($work/ca/dns.{key,crt}), logging
# every query to $work/unbound.log, refusing every name outside the zones it is given.
# Usage: unbound_lab_config FILE INTERFACE@PORT… < ZONE_LINES
#   (ZONE_LINES: unbound `local-zone:`/`local-data:` lines; each INTERFACE@PORT is one listener,
#   port 853 serving TLS and 443 HTTPS).
unbound_lab_config() {
  local file="$1" listener; shift
  {
    cat <<CONF
server:
  username: ""
  chroot: ""
  directory: "$work"
  pidfile: ""
  use-syslog: no
  logfile: "$work/unbound.log"
  verbosity: 1
  log-queries: yes
  do-ip6: no
CONF
    for listener in "$@"; do echo "  interface: $listener"; done
    cat <<CONF
  tls-port: 853
  https-port: 443
  http-endpoint: "/dns-query"
  tls-service-key: "$work/ca/dns.key"
  tls-service-pem: "$work/ca/dns.crt"
  access-control: 0.0.0.0/0 allow
  module-config: "iterator"
  # Nothing is looked up beyond the lab: every name outside its zones is refused.
  local-zone: "." refuse
CONF
    sed 's/^/  /'
  } > "$file"
}

# The DNS labs' start: unbound required, the lab up, the laptop's resolver file ($resolv) naming
# its own cleartext resolver 198.51.100.99 (which answers example.test with 198.51.100.80,
# logging to $work/plain-dns.log), netextd's environment, and 198.51.100.53 (the encrypted
# server), 198.51.100.99 and every further address given on the internet namespace's loopback.
# Usage: dns_lab_up [ADDRESS…]
dns_lab_up() {
  local address
  command -v unbound > /dev/null || { echo "FAIL unbound is not installed (apt-get install unbound)"; exit 1; }
  lab_up || { echo "FAIL lab"; exit 1; }
  mkdir -p "/etc/netns/$LAB_LAPTOP"
  resolv="/etc/netns/$LAB_LAPTOP/resolv.conf"
  echo "nameserver 198.51.100.99" > "$resolv"
  e2e_netextd_environment "$resolv"
  for address in 198.51.100.53 198.51.100.99 "$@"; do lab_in "$LAB_INTERNET" ip addr add "$address/32" dev lo; done
  lab_spawn "$LAB_INTERNET" python3 scripts/e2e/dns-responder.py 198.51.100.99 example.test 198.51.100.80 "$work/plain-dns.log"
}

# The lab CA and unbound serving it on 198.51.100.53 in the internet namespace: makes the CA and
# dns.lab.test's certificate ($work/ca), writes the config for the listeners given (INTERFACE@PORT…)
# with the zone lines read from standard input, starts unbound and waits (10 s) for the first
# listener's port. With `--public`, a copy of the CA certificate anyone may read goes to
# $work/public/ca.crt (for providers running as nobody) and $work/ca is closed to others.
# Usage: unbound_lab_serve [--public] INTERFACE@PORT… < ZONE_LINES
unbound_lab_serve() {
  local public=""
  [ "$1" = --public ] && { public=yes; shift; }
  lab_ca_make "$work/ca" && lab_ca_issue "$work/ca" dns dns.lab.test || { echo "FAIL lab CA"; exit 1; }
  if [ -n "$public" ]; then
    mkdir -m 755 "$work/public" && cp "$work/ca/ca.crt" "$work/public/ca.crt" && chmod 644 "$work/public/ca.crt"
    chmod 700 "$work/ca"
  else
    chmod 644 "$work/ca/dns.key"
  fi
  unbound_lab_config "$work/unbound.conf" "$@"
  lab_spawn "$LAB_INTERNET" unbound -d -c "$work/unbound.conf"
  local first="${1%@*}:${1#*@}"
  lab_wait "ip netns exec $LAB_INTERNET ss -ltn | grep -q '$first'" 10
}

# The DNS proxy labs' server side: unbound over HTTPS on 198.51.100.53 (the CA readable by the
# provider, which runs as nobody: $work/public/ca.crt) answering www.example.test with
# 198.51.100.90 and mail.example.test with .91 — unlike the laptop's own resolver (.80), so each
# answer names its path — and the reference DNS proxy provider registered as com.netext.dns-proxy.
dns_proxy_lab_serve() {
  unbound_lab_serve --public 198.51.100.53@443 <<'ZONE'
local-zone: "example.test." static
local-data: "www.example.test. A 198.51.100.90"
local-data: "mail.example.test. A 198.51.100.91"
ZONE
  printf '{"bundleIdentifier": "com.netext.dns-proxy", "extensionPoint": "dns-proxy", "executable": "%s", "user": "nobody"}\n' "$bin/netext-dns-proxy-provider" > "$NETEXT_PROVIDERS_DIR/dns-proxy.json"
  chmod 644 "$NETEXT_PROVIDERS_DIR/dns-proxy.json"
}
