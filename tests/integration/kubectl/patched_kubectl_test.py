#!/usr/bin/env python3
"""`launchguard review --patched` output as kubectl reads it.

For every manifest fixture (YAML as written, and derived JSON forms: a JSON
stream of its documents and a kind: List), with and without a profile that
blocks and patches more, and with that profile and the launch gate (--gate-image):
  - the output keeps the input's format (YAML stays YAML, JSON stays JSON);
  - `kubectl apply --dry-run=client --validate=false -f OUT` parses every
    document: offline it stops at server discovery with one "unable to
    recognize" per document, and a parse error reads otherwise;
  - the output is, document for document, the input with the `--patch`
    operations applied by python3-jsonpatch (PyYAML reads both, YAML 1.1);
  - reviewing the output again patches nothing, and no finding that the
    first review patched is left.

Usage: patched_kubectl_test.py LAUNCHGUARD FIXTURES_K8S_DIR
The real manifests come from the public fixtures (LAUNCHGUARD_SHARED_FIXTURES,
its k8s/). Exit 77 (skipped) only when kubectl or they are not there.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import jsonpatch
import yaml

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: none, context: {cluster: none}}]
current-context: none
"""

# A patched pod whose unchanged fields and new values are strings that YAML
# 1.1 would read as something else unquoted.
TRICKY = """# a comment before the pod
apiVersion: v1
kind: Pod
metadata:
  name: tricky
  labels: {enabled: "true", mode: "0755", ratio: "1.0", empty: "", tilde: "~", answer: 'yes', sw: "off"}
  annotations:
    note: |
      two lines,
      the last ends here
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: i
    args: ["on", "no", "null", "012", "1e3", "0x1F", "- a", "a: b"]
    env:
    - {name: NCCL_DEBUG, value: "INFO"}
    - {name: FLAG, value: "y"}
    resources: {limits: {nvidia.com/gpu: 8, cpu: "8", memory: 64Gi}}
---
# kept as it is
apiVersion: v1
kind: Service
metadata: {name: s}
"""


def fail(message):
    sys.exit("FAIL: " + message)


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, **kwargs)


def json_stream(text):
    decoder = json.JSONDecoder()
    values, at = [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


def documents_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if text.lstrip().startswith("{"):
            return [d for d in json_stream(text) if d is not None]
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except (ValueError, yaml.YAMLError) as e:
        fail(f"{path} does not read as JSON or YAML: {e}\n{text[:400]}")
        return []


def derived_inputs(fixture_dirs, work):
    """(name, path, is_json) of every input: the YAML fixtures and their JSON forms."""
    inputs = []
    tricky = os.path.join(work, "tricky.yaml")
    with open(tricky, "w", encoding="utf-8") as f:
        f.write(TRICKY)
    yamls = [os.path.join(d, n) for d in fixture_dirs for n in sorted(os.listdir(d))
             if n.endswith(".yaml") and "profile" not in n] + [tricky]
    for path in yamls:
        name = os.path.basename(path)
        inputs.append((name, path, False))
        documents = documents_of(path)
        stream = os.path.join(work, name + ".stream.json")
        with open(stream, "w", encoding="utf-8") as f:
            f.write("\n".join(json.dumps(d, indent=1) for d in documents) + "\n")
        inputs.append((name + " as a JSON stream", stream, True))
        if len(documents) > 1:
            listed = os.path.join(work, name + ".list.json")
            with open(listed, "w", encoding="utf-8") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": documents}, f)
            inputs.append((name + " as a JSON List", listed, True))
    return inputs


def kubectl_parses(path, count, env, label):
    result = run(["kubectl", "apply", "--dry-run=client", "--validate=false", "-f", path], env=env)
    lines = [l for l in result.stderr.splitlines() if "memcache.go" not in l]
    for marker in ("error parsing", "unable to decode", "error converting", "yaml:", "json:", "invalid character"):
        for line in lines:
            if marker in line:
                fail(f"{label}: kubectl cannot parse the output: {line}")
    recognized = sum("unable to recognize" in l for l in lines)
    if recognized != count:
        fail(f"{label}: kubectl read {recognized} documents, expected {count}:\n" + "\n".join(lines))


def patch_findings(report_text):
    """(document entry, rule) of every finding with action patch."""
    report = json.loads(report_text)
    found = set()
    for index, entry in enumerate(report["documents"]):
        for finding in entry.get("report", {}).get("findings", []):
            if finding["action"] == "patch":
                found.add((index, finding["rule"]))
    return found


def check_one(cli, label, path, is_json, profile, work, env):
    out_path = os.path.join(work, "out")
    patched = run([cli, "review", "--patched", *profile, path])
    if patched.returncode == 2:
        fail(f"{label}: --patched refused: {patched.stderr}")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(patched.stdout)
    out = patched.stdout.lstrip()
    if is_json != out.startswith("{"):
        fail(f"{label}: {'JSON' if is_json else 'YAML'} in, not out:\n{patched.stdout[:400]}")

    # Independently: the input's documents with --patch applied by jsonpatch.
    lines = run([cli, "review", "--patch", *profile, path]).stdout.splitlines()
    inputs = documents_of(path)
    if len(lines) != len(inputs):
        fail(f"{label}: {len(inputs)} documents but {len(lines)} patch lines")
    expected = [jsonpatch.apply_patch(d, json.loads(p)) for d, p in zip(inputs, lines)]
    kubectl_parses(out_path, len(expected), env, label)
    got = documents_of(out_path)
    if got != expected:
        fail(f"{label}: the output is not the input patched:\n{patched.stdout}")

    again = run([cli, "review", "--patch", *profile, out_path])
    if again.returncode == 2 or any(l != "[]" for l in again.stdout.splitlines()):
        fail(f"{label}: the patched output still patches: {again.stdout} {again.stderr}")
    before = patch_findings(run([cli, "review", "--format", "json", *profile, path]).stdout)
    after = patch_findings(run([cli, "review", "--format", "json", *profile, out_path]).stdout)
    left = before & after
    if left:
        fail(f"{label}: findings the patch addressed are still there: {sorted(left)}")
    return any(l != "[]" for l in lines)


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    if shutil.which("kubectl") is None:
        print("SKIP: kubectl is not installed (Debian package kubernetes-client; "
              "scripts/install-deps.sh --with-test-tools installs it)")
        sys.exit(77)
    shared_k8s = os.path.join(os.environ.get("LAUNCHGUARD_SHARED_FIXTURES", ""), "k8s")
    if not os.path.isdir(shared_k8s):
        print(f"SKIP: needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found ({shared_k8s!r})")
        sys.exit(77)
    profile_file = os.path.join(fixtures, "ndv5-topology-profile.yaml")
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, KUBECONFIG=os.path.join(work, "kubeconfig"), HOME=work)
        with open(env["KUBECONFIG"], "w", encoding="utf-8") as f:
            f.write(KUBECONFIG)
        # Parse errors read as parse errors, not as the discovery error.
        broken = os.path.join(work, "broken.json")
        with open(broken, "w", encoding="utf-8") as f:
            f.write('{"apiVersion": "v1", "kind": "Pod"}\n---\n{"apiVersion": "v1", "kind": "Pod"}\n')
        result = run(["kubectl", "apply", "--dry-run=client", "--validate=false", "-f", broken], env=env)
        if "error parsing" not in result.stderr and "invalid character" not in result.stderr:
            fail("kubectl does not say that JSON documents separated by --- are a parse error: " + result.stderr)

        patched = 0
        inputs = derived_inputs([fixtures, shared_k8s], work)
        for name, path, is_json in inputs:
            # The third adds the launch gate, whose profile then travels as text (--profile-yaml).
            for profile in ([], ["--profile", profile_file],
                            ["--profile", profile_file, "--gate-image", "registry.example/launchguard:1.0"]):
                label = name + (" (ndv5 profile)" if profile else "") + (" (gate)" if "--gate-image" in profile else "")
                patched += check_one(cli, label, path, is_json, profile, work, env)

        # Several files at once, YAML and JSON: one YAML stream.
        tricky = os.path.join(work, "tricky.yaml")
        stream = os.path.join(work, "tricky.yaml.stream.json")
        mixed = run([cli, "review", "--patched", stream, tricky])
        if mixed.returncode == 2:
            fail("mixed inputs: " + mixed.stderr)
        mixed_path = os.path.join(work, "mixed.out")
        with open(mixed_path, "w", encoding="utf-8") as f:
            f.write(mixed.stdout)
        kubectl_parses(mixed_path, len(documents_of(mixed_path)), env, "mixed inputs")
        if len(documents_of(mixed_path)) != 4:
            fail("mixed inputs: expected 4 documents:\n" + mixed.stdout)

        if patched < 8:
            fail(f"only {patched} inputs were patched; the fixtures should patch more")
        print(f"ok: {len(inputs)} inputs x 3 settings, {patched} patched, all read by kubectl")


if __name__ == "__main__":
    main()
