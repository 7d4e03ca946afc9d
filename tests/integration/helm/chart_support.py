"""What the chart tests share: their settings, helm with values from a dict,
rendered objects, and failures collected rather than raised, so a case
reports every broken check (conftest.py fails the case at its end)."""
import json
import os
import subprocess
import tempfile

import yaml

SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def setting(name, default):
    """A path ctest passes in the environment (tests/integration/helm/CMakeLists.txt); by hand,
    the default of a checkout built into ./build."""
    return os.environ.get(name) or default

NAMESPACE = "gpu-admission"
RELEASE = "lg"

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


class Helm:
    def __init__(self, npm_dir, chart):
        self.binary = os.path.join(npm_dir, "bin", "helm")
        self.chart = chart

    def __call__(self, *args, values=None, namespace=NAMESPACE):
        """helm ARGS with VALUES (a dict) as a values file; the finished process."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(values or {}, f)
            f.flush()
            return run([self.binary, *args, "--namespace", namespace, "-f", f.name])

    def render(self, values=None, namespace=NAMESPACE):
        """The objects helm template makes for VALUES."""
        result = self("template", RELEASE, self.chart, values=values, namespace=namespace)
        if result.returncode != 0:
            raise RuntimeError(f"helm template failed: {result.stderr.strip()}")
        return [d for d in yaml.safe_load_all(result.stdout) if d]


def one(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind} {name or ''}, found {len(found)}")
    return found[0]


CHART = setting("LAUNCHGUARD_CHART", os.path.join(SOURCE, "charts", "launchguard"))
NPM = setting("LAUNCHGUARD_TEST_TOOLS_DIR", os.path.join(SOURCE, "build", "npm"))
