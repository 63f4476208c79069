# netext_install_packages: installs the Debian packages NetExt's build, tests and demo use, if
# missing (needs root; systemd for systemd-analyze only, never systemd-resolved), and creates the
# system user the personal VPN's charon drops to (netext-ikev2).
# netext_install PACKAGE...: installs just those (benchmarks). Another apt-get may hold the dpkg
# lock: retried. Usage: source it, then call one of them.
netext_install_packages() {
  netext_create_users
  netext_install libsqlite3-dev linux-libc-dev util-linux procps iproute2 iputils-ping curl nghttp2-client python3 python3-cryptography python3-h2 tcpdump nftables iptables openssl nginx-light libnginx-mod-stream lighttpd lighttpd-mod-openssl chromium valgrind dante-server dbus-daemon python3-dbusmock wpasupplicant unbound dnsmasq-base strongswan-charon strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins libcharon-extauth-plugins systemd
}

# Installs exactly the given Debian packages, those missing (a benchmark's tools and anchors).
netext_install() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  for attempt in 1 2 3 4 5 6; do
    if DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; then
      netext_quiet_installed_services "${missing[@]}"
      return 0
    fi
    echo "apt-get failed (attempt $attempt); retrying in 10 s" >&2
    sleep 10
  done
  return 1
}

# Packages installed only as test peers (unbound) must not run as the machine's services: on a
# machine whose init started one just now, it is stopped and disabled (the labs start their own).
netext_quiet_installed_services() {
  local package
  for package in "$@"; do
    case "$package" in
      unbound)
        if command -v systemctl > /dev/null && systemctl is-active --quiet unbound 2> /dev/null; then
          echo "stopping the unbound service the package started (the labs run their own)" >&2
          systemctl disable --now unbound > /dev/null 2>&1 || true
        fi ;;
      nginx-light)
        # The package starts a default site on port 80; the labs and benchmarks run their own.
        if command -v systemctl > /dev/null && systemctl is-active --quiet nginx 2> /dev/null; then
          echo "stopping the nginx service the package started (the labs run their own)" >&2
          systemctl disable --now nginx > /dev/null 2>&1 || true
        fi ;;
      lighttpd)
        # Installed for its Digest authentication (scripts/e2e/http-ats.sh), which runs its own.
        if command -v systemctl > /dev/null && systemctl is-active --quiet lighttpd 2> /dev/null; then
          echo "stopping the lighttpd service the package started (the lab runs its own)" >&2
          systemctl disable --now lighttpd > /dev/null 2>&1 || true
        fi ;;
    esac
  done
}

# The system user strongSwan's charon runs as for a personal VPN (dist/sysusers.d/netext.conf).
netext_create_users() {
  id netext-ikev2 > /dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin netext-ikev2
}
