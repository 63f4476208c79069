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
