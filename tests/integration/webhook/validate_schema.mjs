// Validates Kubernetes objects offline against the API schemas of the npm
// package kubernetes-models: Pods and Jobs whole, and for the custom
// workloads (JobSet, MPIJob, PyTorchJob) every pod template, which is where
// launchguard's patches land. Usage: node validate_schema.mjs NODE_MODULES
// FILE.json... where NODE_MODULES holds kubernetes-models (installed outside
// the source tree by scripts/test.sh). Prints one line per object; exits 1
// when any object is invalid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const load = (path) => import(pathToFileURL(join(modules, "kubernetes-models", path)).href);
const { Pod, PodTemplateSpec } = await load("v1/index.js");
const { Job } = await load("batch/v1/index.js");

function templates(object) {
  const spec = object.spec ?? {};
  const found = [];
  const add = (path, template) => { if (template) found.push([path, template]); };
  switch (object.kind) {
    case "JobSet":
      (spec.replicatedJobs ?? []).forEach((rj, i) =>
        add(`spec.replicatedJobs[${i}].template.spec.template`, rj?.template?.spec?.template));
      break;
    case "MPIJob":
      for (const [role, replica] of Object.entries(spec.mpiReplicaSpecs ?? {}))
        add(`spec.mpiReplicaSpecs.${role}.template`, replica?.template);
      break;
    case "PyTorchJob":
      for (const [role, replica] of Object.entries(spec.pytorchReplicaSpecs ?? {}))
        add(`spec.pytorchReplicaSpecs.${role}.template`, replica?.template);
      break;
  }
  return found;
}

let bad = 0;
for (const file of process.argv.slice(3)) {
  const object = JSON.parse(readFileSync(file, "utf8"));
  const name = `${object.kind}/${object.metadata?.name ?? "?"} (${file})`;
  try {
    if (object.kind === "Pod") new Pod(object).validate();
    else if (object.kind === "Job") new Job(object).validate();
    else {
      const list = templates(object);
      if (list.length === 0) throw new Error(`no pod template found in kind ${object.kind}`);
      for (const [path, template] of list) {
        try { new PodTemplateSpec(template).validate(); }
        catch (e) { throw new Error(`${path}: ${e.message}`); }
      }
    }
    console.log(`valid: ${name}`);
  } catch (e) {
    bad += 1;
    console.log(`INVALID: ${name}: ${e.message}`);
  }
}
process.exit(bad === 0 ? 0 : 1);
