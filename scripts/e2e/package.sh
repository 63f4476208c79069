#!/usr/bin/env bash
# Install test of the Debian package scripts/package builds: dpkg installs it into a throw-away
# root (no Swift toolchain on PATH, nothing run against the host), every binary answers --help and
# --version and loads nothing from a toolchain, the man pages render without a warning, the units
# pass systemd-analyze verify, the installed netextd starts (in a namespace of its own) and bash
# completes configuration names from it; then dpkg removes the package and keeps the conffiles.
# Usage: scripts/e2e/package.sh PATH.deb   One line per check; non-zero on failure.
cd "$(dirname "$0")/../.."
deb="$(readlink -f "${1:?usage: scripts/e2e/package.sh PATH.deb}")"
NETEXT_BIN_DIR=/nonexistent source scripts/lib/e2e.sh package
source scripts/lib/install-packages.sh
netext_install dpkg binutils groff-base systemd iproute2 > /dev/null

root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: > "$root/var/lib/dpkg/status"
dpkg_root() { dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null "$@"; }
check "the package says what it is and what it needs" bash -c "dpkg-deb --field '$deb' Package Version Depends > '$work/fields' && grep -qx 'Package: netext' '$work/fields' && grep -q '^Depends: .*libc6.*nftables' '$work/fields' && ! grep -qi swift '$work/fields'"
check "dpkg installs it into a throw-away root" bash -c "$(declare -f dpkg_root); root='$root'; dpkg_root -i '$deb' > '$work/install.log' 2>&1"
check "dpkg knows it as installed" bash -c "dpkg-query --admindir='$root/var/lib/dpkg' -W -f='\${Status}' netext | grep -q 'install ok installed'"

binaries=(usr/bin/netext usr/bin/netext-server usr/bin/netext-urlfilter-db usr/sbin/netextd usr/libexec/netext/netext-tunnel-provider usr/libexec/netext/netext-filter-provider usr/libexec/netext/netext-hotspot-helper usr/libexec/netext/netext-transferd usr/libexec/netext/netext-proxy-provider usr/libexec/netext/netext-dns-proxy-provider usr/libexec/netext/netext-relay-provider)
clean() { env -i PATH=/usr/bin:/bin HOME=/nonexistent "$@"; }
for binary in "${binaries[@]}"; do
  name="$(basename "$binary")"
  check "$name: --version, without a toolchain on PATH" bash -c "$(declare -f clean); clean '$root/$binary' --version | grep -Eq '(^|$name )[0-9]+\.[0-9]+\.[0-9]+$'"
  check "$name: --help" bash -c "$(declare -f clean); clean '$root/$binary' --help | grep -qi usage"
  check "$name: no RUNPATH but \$ORIGIN, every library found, none from a toolchain" \
    bash -c "! readelf -d '$root/$binary' | grep -E 'R(UN)?PATH' | grep -vq 'path: \[\\\$ORIGIN\]\$' && ! ldd '$root/$binary' | grep -Eq 'not found|/opt/swift|libswift|libFoundation|libdispatch'"
done

for page in usr/share/man/man1/netext.1.gz usr/share/man/man1/netext-urlfilter-db.1.gz usr/share/man/man8/netextd.8.gz usr/share/man/man8/netext-server.8.gz; do
  check "man page $(basename "$page" .gz) renders without a warning" \
    bash -c "zcat '$root/$page' | groff -man -Tutf8 -ww -z 2>&1 | (! grep -q .) && zcat '$root/$page' | grep -q '^\.SH SYNOPSIS'"
done
check "man netext-server documents every role's options (e.g. pir --database)" bash -c "zcat '$root/usr/share/man/man8/netext-server.8.gz' | grep -q '^\.SS netext\\\\-server pir' && zcat '$root/usr/share/man/man8/netext-server.8.gz' | grep -q 'database'"
check "completions for bash, zsh and fish" bash -c "for c in netext netextd netext-server netext-urlfilter-db; do test -s '$root/usr/share/bash-completion/completions/'\$c && test -s '$root/usr/share/zsh/vendor-completions/_'\$c && test -s '$root/usr/share/fish/vendor_completions.d/'\$c.fish || exit 1; done && bash -n '$root/usr/share/bash-completion/completions/netext'"

e2e_verify_units "$root/usr/lib/systemd/system" "$work/verify.log" -e "s|/usr/bin/|$root/usr/bin/|g" -e "s|/usr/sbin/|$root/usr/sbin/|g" -e "s|/etc/netext/|$root/etc/netext/|g"
check "the installed units: eight, and systemd-analyze verify finds nothing to say" bash -c "test \$(ls '$work/units' | wc -l) = 8 && test \"\$(cat '$work/verify.log')\" = 'exit 0'"
check "sysusers: the netext group and the netext-server user" bash -c "grep -q '^g netext ' '$root/usr/lib/sysusers.d/netext.conf' && grep -q '^u netext-server ' '$root/usr/lib/sysusers.d/netext.conf'"
check "the reference tunnel provider is registered at its installed path" grep -q '"executable": "/usr/libexec/netext/netext-tunnel-provider"' "$root/etc/netext/providers/com.netext.tunnel.json"
check "the built-in relay provider is registered as a transparent proxy at its installed path" bash -c "grep -q '\"executable\": \"/usr/libexec/netext/netext-relay-provider\"' '$root/etc/netext/providers/com.netext.relay.json' && grep -q '\"extensionPoint\": \"transparent-proxy\"' '$root/etc/netext/providers/com.netext.relay.json'"
check "and as an app proxy for per-app relays" bash -c "grep -q '\"executable\": \"/usr/libexec/netext/netext-relay-provider\"' '$root/etc/netext/providers/com.netext.relay.per-app.json' && grep -q '\"extensionPoint\": \"app-proxy\"' '$root/etc/netext/providers/com.netext.relay.per-app.json'"
check "and as a packet tunnel over connect-ip" bash -c "grep -q '\"executable\": \"/usr/libexec/netext/netext-relay-provider\"' '$root/etc/netext/providers/com.netext.relay.ip-tunnel.json' && grep -q '\"extensionPoint\": \"packet-tunnel\"' '$root/etc/netext/providers/com.netext.relay.ip-tunnel.json'"
check "the reference app, transparent and DNS proxies are registered at their installed paths" bash -c "grep -q '\"executable\": \"/usr/libexec/netext/netext-proxy-provider\"' '$root/etc/netext/providers/com.netext.proxy.json' && grep -q '\"extensionPoint\": \"transparent-proxy\"' '$root/etc/netext/providers/com.netext.transparent.json' && grep -q '\"executable\": \"/usr/libexec/netext/netext-dns-proxy-provider\"' '$root/etc/netext/providers/com.netext.dns-proxy.json'"

# The installed netextd, in a namespace of its own, and bash completing configuration names.
ip netns add "$LAB_LAPTOP" && lab_in "$LAB_LAPTOP" ip link set lo up
export NETEXT_STATE_DIR="$work/state" NETEXT_SOCKET="$work/netextd.sock" NETEXT_PROVIDERS_DIR="$root/etc/netext/providers" \
  NETEXT_RESOLV_CONF="$work/resolv.conf" NETEXT_FILTER_RULES_ROOT="$work/rules" NETEXT_DNS_STUB=127.0.0.1:0
echo "nameserver 127.0.0.1" > "$work/resolv.conf"
lab_spawn "$LAB_LAPTOP" "$root/usr/sbin/netextd" 2>> "$work/netextd.log"
check "the installed netextd starts and answers the installed netext" lab_wait "'$root/usr/bin/netext' list" 20
"$root/usr/bin/netext" create --name "Office VPN" --provider com.netext.tunnel --server 203.0.113.2:51900 > /dev/null 2>&1
"$root/usr/bin/netext" create --name Home --provider com.netext.tunnel --server 203.0.113.3:51900 > /dev/null 2>&1
complete_words() {
  PATH="$root/usr/bin:$PATH" bash -c "source '$root/usr/share/bash-completion/completions/netext'
    COMP_WORDS=($1); COMP_CWORD=\$(( \${#COMP_WORDS[@]} - 1 )); COMP_LINE='${1//\"/}'; COMP_POINT=\${#COMP_LINE}
    _netext; printf '%s\n' \"\${COMPREPLY[@]}\""
}
check "bash completes configuration names from netextd (netext start <TAB>)" bash -c "$(declare -f complete_words); root='$root'; complete_words 'netext start \"\"' | sort | tr '\n' ' ' | grep -q 'Home Office'"
check "bash completes a configuration name's prefix (netext stop Ho<TAB>)" bash -c "$(declare -f complete_words); root='$root'; test \"\$(complete_words 'netext stop Ho')\" = Home"

check "dpkg removes it: binaries gone, configuration kept" bash -c "$(declare -f dpkg_root); root='$root'; dpkg_root -r netext > '$work/remove.log' 2>&1 && test ! -e '$root/usr/bin/netext' && test -e '$root/etc/netext/server/pir.env'"
check "dpkg purges it: configuration gone too" bash -c "$(declare -f dpkg_root); root='$root'; dpkg_root -P netext > '$work/purge.log' 2>&1 && test ! -e '$root/etc/netext/server/pir.env'"

e2e_finish "$work/install.log" "$work/verify.log" "$work/netextd.log" "$work/remove.log"
