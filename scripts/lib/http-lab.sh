# The App Transport Security lab (issue 24): nginx in the office namespace serving, under a lab
# CA, one good server and one of each kind ATS refuses, all on 203.0.113.2:
#   good.lab.test:8443   TLS 1.2/1.3, ECDHE, P-256 key, SHA-256, HTTP/2 and HTTP/1.1
#   h1.lab.test:8444     the same, HTTP/1.1 only
#   tls10.lab.test:8445  TLS 1.0 only
#   rsakx.lab.test:8446  TLS 1.2, RSA key exchange only (no forward secrecy)
#   weakkey.lab.test:8447  a 1024-bit RSA key
#   sha1.lab.test:8448   a certificate signed with SHA-1
#   expired.lab.test:8449  a certificate that expired in 2021
#   plain.lab.test:8080  cleartext HTTP
#   digest.lab.test      a name for the servers a script adds (scripts/e2e/http-ats.sh: lighttpd on 8450)
# Sets HTTP_LAB_RESOLVE (the --resolve options for those names) and HTTP_LAB_CA (the CA file).
# Usage: source scripts/lib/e2e.sh NAME; source scripts/lib/http-lab.sh; http_lab_up

HTTP_LAB_ADDRESS=203.0.113.2
HTTP_LAB_NAMES="good h1 tls10 rsakx weakkey sha1 expired plain digest"
HTTP_LAB_RESOLVE=()
for name in $HTTP_LAB_NAMES; do HTTP_LAB_RESOLVE+=(--resolve "$name.lab.test:$HTTP_LAB_ADDRESS"); done
HTTP_LAB_CA="$work/ca/ca.crt"

# http_lab_issue NAME KEY DIGEST [START END]: $work/ca/NAME.crt/.key for NAME.lab.test, signed by
# the lab CA with DIGEST; KEY is "ec" (P-256) or "rsa:BITS"; START/END as YYYYMMDDHHMMSSZ.
http_lab_issue() {
  local name="$1" key="$2" digest="$3" start="${4:-}" end="${5:-}" dir="$work/ca"
  local keyopts=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
  [[ "$key" == rsa:* ]] && keyopts=(-newkey "$key")
  openssl req -new "${keyopts[@]}" -nodes -subj "/CN=$name.lab.test" -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>> "$dir/openssl.err" || return 1
  printf 'subjectAltName=DNS:%s.lab.test\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n' "$name" > "$dir/$name.ext"
  local dates=(-days 2)
  [ -n "$start" ] && dates=(-startdate "$start" -enddate "$end")
  openssl ca -batch -config "$dir/ca.cnf" -cert "$dir/ca.crt" -keyfile "$dir/ca.key" -md "$digest" "${dates[@]}" \
    -extfile "$dir/$name.ext" -notext -in "$dir/$name.csr" -out "$dir/$name.crt" 2>> "$dir/openssl.err" || { cat "$dir/openssl.err" >&2; return 1; }
  chmod 600 "$dir/$name.key"
}

http_lab_up() {
  lab_up || return 1
  local dir="$work/ca"
  mkdir -p "$dir/issued" && chmod 700 "$dir" && touch "$dir/index.txt" && echo 1000 > "$dir/serial"
  printf '[ca]\ndefault_ca=lab\n[lab]\ndatabase=%s/index.txt\nnew_certs_dir=%s/issued\nserial=%s/serial\npolicy=any\nunique_subject=no\n[any]\ncommonName=supplied\n' \
    "$dir" "$dir" "$dir" > "$dir/ca.cnf"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=NetExt ATS lab CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2> "$dir/openssl.err" || return 1
  chmod 644 "$dir/ca.crt"
  http_lab_issue good ec sha256 && http_lab_issue h1 ec sha256 && http_lab_issue tls10 rsa:2048 sha256 &&
  http_lab_issue rsakx rsa:2048 sha256 && http_lab_issue weakkey rsa:1024 sha256 && http_lab_issue sha1 rsa:2048 sha1 &&
  http_lab_issue expired ec sha256 20200101000000Z 20210101000000Z || return 1
  mkdir -p "$work/www/slow" && echo "hello from the ATS lab" > "$work/www/index.html"
  head -c $((4 << 20)) /dev/urandom > "$work/www/slow/big.bin" && chmod -R a+rX "$work/www"
  local weak='ssl_ciphers "DEFAULT:@SECLEVEL=0";'
  {
    printf 'worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log %s;\ndaemon off;\nevents { worker_connections 256; }\n' "$work" "$work" "${HTTP_LAB_LOG_LEVEL:-error}"
    printf 'http {\n  access_log %s/nginx-access.log;\n  client_body_temp_path %s/nginx-body;\n  proxy_temp_path %s/nginx-proxy;\n' "$work" "$work" "$work"
    printf '  fastcgi_temp_path %s/nginx-fcgi;\n  uwsgi_temp_path %s/nginx-uwsgi;\n  scgi_temp_path %s/nginx-scgi;\n  keepalive_requests 10000;\n' "$work" "$work" "$work"
    http_lab_server 8443 good "http2 on;" "ssl_protocols TLSv1.2 TLSv1.3;"
    http_lab_server 8444 h1 "" "ssl_protocols TLSv1.2 TLSv1.3;"
    http_lab_server 8445 tls10 "" "ssl_protocols TLSv1; $weak"
    http_lab_server 8446 rsakx "" 'ssl_protocols TLSv1.2; ssl_ciphers "AES128-GCM-SHA256:AES256-GCM-SHA384";'
    http_lab_server 8447 weakkey "" "ssl_protocols TLSv1.2 TLSv1.3; $weak"
    http_lab_server 8448 sha1 "" "ssl_protocols TLSv1.2 TLSv1.3; $weak"
    http_lab_server 8449 expired "" "ssl_protocols TLSv1.2 TLSv1.3;"
    printf '  server {\n    listen %s:8080;\n    server_name plain.lab.test;\n    root %s;\n  }\n}\n' "$HTTP_LAB_ADDRESS" "$work/www"
  } > "$work/nginx.conf"
  lab_spawn "$LAB_OFFICE" nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"
  lab_wait "ip netns exec '$LAB_OFFICE' ss -Hltn 'sport = :8449' | grep -q LISTEN" 10 || { cat "$work/nginx-error.log" >&2; return 1; }
}

# http_lab_server PORT NAME HTTP2 TLS-DIRECTIVES: one TLS server block.
http_lab_server() {
  # nginx 1.22 takes http2 on the listen line; `http2 on;` is from 1.25.
  local http2=""; [ -n "$3" ] && http2=" http2"
  printf '  server {\n    listen %s:%s ssl%s;\n    server_name %s.lab.test;\n    ssl_certificate %s/ca/%s.crt;\n    ssl_certificate_key %s/ca/%s.key;\n    %s\n    root %s;\n    location /redirect { return 302 /index.html; }\n    location /slow/ { limit_rate 1m; }\n    location = /cookie/set { add_header Set-Cookie "session=s3cr3t; Path=/cookie; Secure; HttpOnly; SameSite=Lax"; add_header Set-Cookie "theme=dark; Max-Age=3600; Path=/"; return 200 "set\\n"; }\n    location = /cookie/add { add_header Set-Cookie "c$arg_n=$arg_n; Path=/; Max-Age=3600"; return 200 "added\\n"; }\n    location = /cookie/echo { return 200 "cookie=$http_cookie\\n"; }\n    location = /upload { client_max_body_size 16m; return 200 "received $content_length bytes\\n"; }\n  }\n' \
    "$HTTP_LAB_ADDRESS" "$1" "$http2" "$2" "$work" "$2" "$work" "$2" "$4" "$work/www"
}

# netext http in the laptop namespace, the lab's names resolved and its CA trusted.
lab_http() { local verb="$1"; shift; ip netns exec "$LAB_LAPTOP" "$bin/netext" http "$verb" --cacert "$HTTP_LAB_CA" "${HTTP_LAB_RESOLVE[@]}" "$@"; }
