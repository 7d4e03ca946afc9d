#!/usr/bin/env bash
# The Kubernetes collection path of docs/fleet.md, checked offline: kubectl
# reads deploy/kubernetes/node-check-textfile-daemonset.yaml and applies
# deploy/kubernetes/npd-launchguard-patch.yaml to a minimal NPD DaemonSet
# (`kubectl patch --local`, no cluster), and both resulting DaemonSets pass
# the kubernetes-models schemas (tests/integration/helm/validate_objects.mjs).
# Skips (77) only when kubectl is missing; fails when the npm models are.
# usage: check_k8s_manifests.sh SOURCE_DIR NODE_MODULES OUT_DIR
set -euo pipefail
src="$1" modules="$2" out="$3"
command -v kubectl >/dev/null || { echo "SKIP: kubectl not installed (scripts/install-deps.sh --with-test-tools)"; exit 77; }
[ -d "$modules/kubernetes-models" ] || { echo "FAIL: no kubernetes-models under $modules (scripts/install-test-tools.sh)"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
kubectl patch --local --type merge -p '{}' -o json \
  -f "$src/deploy/kubernetes/node-check-textfile-daemonset.yaml" >"$out/node-check-daemonset.json"
kubectl patch --local --type strategic -o json -f "$src/tests/integration/fleet/npd-daemonset-base.yaml" \
  --patch-file "$src/deploy/kubernetes/npd-launchguard-patch.yaml" >"$out/npd-patched.json"
python3 - "$out/npd-patched.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))["spec"]["template"]["spec"]
container = spec["containers"][0]
mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
want = {"config": "/config", "launchguard-config": "/config/launchguard", "host-root": "/host",
        "textfile": "/var/lib/node_exporter/textfile"}
if mounts != want or "--config.custom-plugin-monitor=/config/launchguard/launchguard-node-check.json" not in container["args"] \
        or not spec.get("hostNetwork"):
    sys.exit("FAIL: patched NPD DaemonSet: mounts %s, args %s" % (mounts, container["args"]))
PY
node "$src/tests/integration/helm/validate_objects.mjs" "$modules" "$out/node-check-daemonset.json" "$out/npd-patched.json"
