// Validates rendered chart objects offline against the Kubernetes API schemas
// of the npm packages kubernetes-models (core, apps, policy, networking,
// admissionregistration), @kubernetes-models/cert-manager (Issuer,
// Certificate) and @kubernetes-models/prometheus-operator (ServiceMonitor).
// Usage: node validate_objects.mjs NODE_MODULES FILE.json...; each file holds
// one object. An object of a kind with no model here is INVALID, so nothing
// passes unchecked. Prints one line per object; exits 1 if any is invalid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const load = (...path) => import(pathToFileURL(join(modules, ...path)).href);

const groups = {
  "v1": await load("kubernetes-models", "v1/index.js"),
  "apps/v1": await load("kubernetes-models", "apps/v1/index.js"),
  "policy/v1": await load("kubernetes-models", "policy/v1/index.js"),
  "networking.k8s.io/v1": await load("kubernetes-models", "networking.k8s.io/v1/index.js"),
  "admissionregistration.k8s.io/v1": await load("kubernetes-models", "admissionregistration.k8s.io/v1/index.js"),
  "cert-manager.io/v1": await load("@kubernetes-models/cert-manager", "cert-manager.io/v1/index.js"),
  "monitoring.coreos.com/v1": await load("@kubernetes-models/prometheus-operator", "monitoring.coreos.com/v1/index.js"),
};

let bad = 0;
for (const file of process.argv.slice(3)) {
  const object = JSON.parse(readFileSync(file, "utf8"));
  const name = `${object.apiVersion}/${object.kind}/${object.metadata?.name ?? "?"} (${file})`;
  try {
    const Model = groups[object.apiVersion]?.[object.kind];
    if (typeof Model !== "function") throw new Error(`no model for ${object.apiVersion} ${object.kind}`);
    new Model(object).validate();
    console.log(`valid: ${name}`);
  } catch (e) {
    bad += 1;
    console.log(`INVALID: ${name}: ${e.message}`);
  }
}
process.exit(bad === 0 ? 0 : 1);
