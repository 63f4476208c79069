# A lab certificate authority made with openssl, for labs and benchmarks that serve TLS: a P-256
# CA and leaf certificates it signs, each for the DNS names and IP addresses given (in its
# subjectAltName, as RFC 6125 clients check), valid for two days.
# Usage (sourced):
#   lab_ca_make DIR                      → DIR/ca.crt, DIR/ca.key
#   lab_ca_issue DIR NAME SAN...         → DIR/NAME.crt (leaf then CA), DIR/NAME.key (0600)
#     SAN: a host name (pir.lab.test) or an IP address (127.0.0.1, ::1)
#   lab_ca_issue_client DIR NAME          → DIR/NAME.pem: a client certificate (clientAuth) and its
#                                          key in one file, mode 0600

lab_ca_make() {
  local dir="$1"
  mkdir -p "$dir" && chmod 700 "$dir" || return 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=NetExt lab CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  chmod 644 "$dir/ca.crt"
}

lab_ca_issue() {
  local dir="$1" name="$2"; shift 2
  local san="" entry
  for entry in "$@"; do
    if [[ "$entry" =~ ^[0-9.]+$ || "$entry" == *:* ]]; then san+="${san:+,}IP:$entry"; else san+="${san:+,}DNS:$entry"; fi
  done
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  printf 'subjectAltName=%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' "$san" > "$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 -sha256 \
    -extfile "$dir/$name.ext" -out "$dir/$name.leaf" 2> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  cat "$dir/$name.leaf" "$dir/ca.crt" > "$dir/$name.crt" && rm -f "$dir/$name.leaf" "$dir/$name.csr" "$dir/$name.ext"
  chmod 600 "$dir/$name.key"
}

lab_ca_issue_client() {
  local dir="$1" name="$2"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > "$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 -sha256 \
    -extfile "$dir/$name.ext" -out "$dir/$name.leaf" 2> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  (umask 077; cat "$dir/$name.leaf" "$dir/$name.key" > "$dir/$name.pem") && rm -f "$dir/$name.leaf" "$dir/$name.csr" "$dir/$name.ext" "$dir/$name.key"
}
