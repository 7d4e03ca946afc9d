#!/usr/bin/env bash
# webhook_bench.sh — launchguard-webhook's /mutate next to nginx serving a
# static response of the same size over TLS, on this machine, in the same run.
#
# Usage: bench/webhook_bench.sh WEBHOOK_BINARY [SECONDS] [BASELINE_BINARY]
#   BASELINE_BINARY: another build, run beside WEBHOOK_BINARY in the same
#   run (its columns are "base ..."), so a change is judged against what it
#   replaces under the same load.
#   needs nginx-light, wrk, nghttp2-client (h2load), openssl, /usr/bin/python3
#
# The request: a ~10 KB AdmissionReview of a real manifest
# (the public fixtures' k8s/, LAUNCHGUARD_SHARED_FIXTURES or ../shared/fixtures
# beside the checkout: the largest multi-container workload there), sent by
# keep-alive HTTP/1.1 over TLS 1.3 as the API server sends it.  nginx answers
# every POST with the webhook's own response to that review (a file of the
# same size), so both sides move the same bytes; nginx does no work besides.
# A webhook with a review cache runs twice: as deployed (its cache answers
# the repeated object, as it answers the pods of one Job) and with
# --review-cache 0, so every request is reviewed (a workload admitted once).
#   1. throughput: wrk -t2 -c16 for SECONDS (default 10), twice each,
#      alternating between the servers and nginx; the median of requests/s;
#   2. latency at a fixed rate: h2load --h1 -c10 --rps 100 (1,000 requests/s)
#      for SECONDS, per-request times from --log-file, p50 / p99; three
#      interleaved runs each, the run with the median p99 reported;
#   3. peak RSS of each webhook (VmHWM) after both.
# Targets (docs/design/WEBHOOK.md): p99 <= 2 ms at 1,000/s; >= 5,000
# requests/s on 2 cores; peak RSS <= 50 MB. nginx is a baseline for the
# same bytes, no longer a target.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
src=$(cd "$here/.." && pwd -P)
webhook=${1:?usage: webhook_bench.sh WEBHOOK_BINARY [SECONDS] [BASELINE_BINARY]}
seconds=${2:-10}
baseline=${3:-}
for tool in nginx wrk h2load openssl /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "webhook_bench: $tool not found (apt-get install nginx-light wrk nghttp2-client)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/lgwhbench.XXXXXX)
chmod 0755 "$work"  # nginx's workers run as www-data
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  if [ -n "${LG_BENCH_KEEP:-}" ]; then echo "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- certificates, as the chart makes them: a CA and a serving pair with SANs
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=launchguard.launchguard.svc \
  -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
echo "subjectAltName=DNS:launchguard.launchguard.svc,IP:127.0.0.1" >"$work/san.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
  -extfile "$work/san.ext" -out "$work/tls.crt" 2>/dev/null

# --- the review: the largest workload among the fixtures, as an AdmissionReview
/usr/bin/python3 - "${LG_BENCH_FIXTURES:-${LAUNCHGUARD_SHARED_FIXTURES:-$src/../shared/fixtures}/k8s}" "$work/review.json" <<'PY'
import glob, json, os, sys, yaml
best = None
for path in glob.glob(os.path.join(sys.argv[1], "**", "*.yaml"), recursive=True):
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if isinstance(d, dict) and "kind" in d]
    except yaml.YAMLError:
        continue
    for d in docs:
        size = len(json.dumps(d))
        if best is None or size > best[0]:
            best = (size, d)
obj = best[1]
group, _, version = obj.get("apiVersion", "v1").rpartition("/")
review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "bench", "kind": {"group": group, "version": version, "kind": obj["kind"]},
                      "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
                      "namespace": "bench", "operation": "CREATE",
                      "userInfo": {"username": "system:serviceaccount:kube-system:job-controller",
                                   "groups": ["system:serviceaccounts", "system:authenticated"]},
                      "object": obj, "oldObject": None, "dryRun": False,
                      "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}
# Real objects as the API server sends them carry managedFields and status;
# pad with a managedFields entry so the review is ~10 KB like a real one.
meta = obj.setdefault("metadata", {})
meta.setdefault("managedFields", [{"manager": "kubectl-client-side-apply", "operation": "Update",
                                   "apiVersion": obj.get("apiVersion", "v1"), "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {".": {}}}}])
text = json.dumps(review)
while len(text) < 10000:
    meta["managedFields"].append(dict(meta["managedFields"][0]))
    text = json.dumps(review)
open(sys.argv[2], "w").write(text)
print(f"review: {obj['kind']} {meta.get('name', '?')}, {len(text)} bytes")
PY

# Each server: a name and the binary with its options. A build with a
# review cache also runs with --review-cache 0 (every request reviewed).
declare -a names
declare -A port pid
start_server() {  # name binary [options...]
  local name=$1 binary=$2
  shift 2
  "$binary" --listen 127.0.0.1:0 --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" --threads 2 \
    --port-file "$work/$name.port" --log-format json "$@" >"$work/$name.log" 2>&1 &
  pid[$name]=$!
  pids+=("$!")
  names+=("$name")
}
start_build() {  # prefix binary
  start_server "${1}webhook" "$2"
  if "$2" --help 2>/dev/null | grep -q -- --review-cache; then start_server "${1}uncached" "$2" --review-cache 0; fi
}
start_build "" "$webhook"
[ -n "$baseline" ] && start_build "base-" "$baseline"
for name in "${names[@]}"; do
  for _ in $(seq 50); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
  port[$name]=$(cat "$work/$name.port")
done
wport=${port[webhook]}
curl -sS --cacert "$work/ca.crt" --resolve launchguard.launchguard.svc:"$wport":127.0.0.1 \
  -H 'Content-Type: application/json' --data-binary @"$work/review.json" \
  "https://launchguard.launchguard.svc:$wport/mutate" -o "$work/response.json"
echo "webhook response: $(wc -c <"$work/response.json") bytes"

# --- nginx: the same certificate, the same response bytes for every POST
mkdir -p "$work/static" "$work/nginx-tmp"
cp "$work/response.json" "$work/static/mutate"
chmod 0644 "$work/static/mutate"
nport=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx-tmp;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nport ssl;
    ssl_certificate $work/tls.crt;
    ssl_certificate_key $work/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    client_max_body_size 16m;
    location / {
      root $work/static;
      default_type application/json;
      error_page 405 =200 \$uri;   # POST to a static file: answer with the file
    }
  }
}
NGINX
nginx -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
nbytes=$(curl -sS --fail --cacert "$work/ca.crt" --resolve launchguard.launchguard.svc:"$nport":127.0.0.1 \
  --data-binary @"$work/review.json" "https://launchguard.launchguard.svc:$nport/mutate" | wc -c)
echo "nginx response: $nbytes bytes"

cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/review.json", "rb")
wrk.body = f:read("*a")
f:close()
LUA

rps() { wrk -t2 -c16 -d"${seconds}s" -s "$work/post.lua" "https://127.0.0.1:$1/mutate" | awk '/Requests\/sec/ {print $2}'; }
port[nginx]=$nport
columns=("${names[@]}" nginx)
declare -A rates
for round in 1 2; do
  for name in "${columns[@]}"; do rates[$name]+="$(rps "${port[$name]}") "; done
done
median() { /usr/bin/python3 -c 'import statistics,sys; print(f"{statistics.median(map(float, sys.argv[1:])):.0f}")' "$@"; }

latency() {  # port -> "p50_ms p99_ms n"
  rm -f "$work/lat.log"
  h2load --h1 -c10 --rps 100 -D "$seconds" -d "$work/review.json" -H 'content-type: application/json' \
    --log-file="$work/lat.log" "https://127.0.0.1:$1/mutate" >"$work/h2load.out" 2>&1
  /usr/bin/python3 - "$work/lat.log" <<'PY'
import sys
times = sorted(int(l.split("\t")[2]) for l in open(sys.argv[1]) if l.strip() and l.split("\t")[1] == "200")
p = lambda q: times[min(len(times) - 1, int(q * len(times)))] / 1000
print(f"{p(0.50):.3f} {p(0.99):.3f} {len(times)}")
PY
}
# Three interleaved runs each: on a small shared machine one preempted
# burst moves a single run's p99 by milliseconds. The run with the median
# p99 is reported; every run's p99 is printed below the table.
declare -A lat
for round in 1 2 3; do
  for name in "${columns[@]}"; do lat[$name.$round]=$(latency "${port[$name]}"); done
done
median_run() {  # name -> "p50 p99 n" of the run with the median p99
  printf '%s\n' "${lat[$1.1]}" "${lat[$1.2]}" "${lat[$1.3]}" | sort -n -k2 | sed -n 2p
}
all_p99() { echo "$(cut -d' ' -f2 <<<"${lat[$1.1]}") $(cut -d' ' -f2 <<<"${lat[$1.2]}") $(cut -d' ' -f2 <<<"${lat[$1.3]}")"; }
row() {  # label, then one value per column
  printf '%-34s' "$1"
  shift
  printf ' %13s' "$@"
  echo
}

echo
echo "launchguard-webhook vs nginx (static, same bytes), TLS 1.3, keep-alive, ${seconds} s per run, $(nproc) CPUs"
row "" "${columns[@]}"
declare -a r p50 p99 n rss
for name in "${columns[@]}"; do
  # shellcheck disable=SC2086
  r+=("$(median ${rates[$name]})")
  read -r a b c <<<"$(median_run "$name")"
  p50+=("$a"); p99+=("$b"); n+=("$c")
  if [ "$name" = nginx ]; then rss+=(""); else rss+=("$(( $(awk '/VmHWM/ {print $2}' "/proc/${pid[$name]}/status") / 1024 )) MB"); fi
done
row "requests/s (wrk, median of 2)" "${r[@]}"
row "p50 at 1,000/s, ms" "${p50[@]}"
row "p99 at 1,000/s (median of 3), ms" "${p99[@]}"
row "requests measured at 1,000/s" "${n[@]}"
row "peak RSS (VmHWM)" "${rss[@]}"
for name in "${columns[@]}"; do
  echo "$name: requests/s ${rates[$name]}; p99 of each run $(all_p99 "$name") ms"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
