#include "kubernetes/workload_spec.h"

#include "kubernetes/spec_fields.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

std::string escape_pointer_token(std::string_view token) {
    std::string out;
    for (char c : token) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

namespace {

std::string group_of(std::string_view api_version) {
    std::size_t slash = api_version.find('/');
    return slash == std::string_view::npos ? std::string() : std::string(api_version.substr(0, slash));
}

// A PodTemplateSpec at `field` ({metadata, spec}).
PodTemplate pod_template(const json::object& holder, std::string_view key, const std::string& field,
                         const std::string& pointer) {
    const json::object* tmpl = object_field(holder, key, field);
    std::string tmpl_field = field_path(field, key);
    if (tmpl == nullptr) throw SpecError{tmpl_field, "missing: the workload has no pod template here"};
    PodTemplate result;
    result.field = field_path(tmpl_field, "spec");
    result.pointer = pointer + "/" + escape_pointer_token(key) + "/spec";
    result.metadata = object_field(*tmpl, "metadata", tmpl_field);
    result.spec = object_field(*tmpl, "spec", tmpl_field);
    if (result.spec == nullptr) throw SpecError{result.field, "missing: a pod template needs a spec"};
    return result;
}

void read_job_spec(const json::object& job_spec, const std::string& field, const std::string& pointer, PodTemplate& out,
                   long long copies, const std::string& copies_source) {
    out = pod_template(job_spec, "template", field, pointer);
    auto parallelism = int_field(job_spec, "parallelism", field);
    auto completions = int_field(job_spec, "completions", field);
    if (parallelism && *parallelism < 0) throw SpecError{field_path(field, "parallelism"), "must not be negative"};
    // parallelism defaults to 1; with fewer completions than parallelism only
    // that many pods run at once.
    long long pods = parallelism.value_or(1);
    std::string source = parallelism ? field_path(field, "parallelism") + "=" + std::to_string(*parallelism)
                                     : field_path(field, "parallelism") + " unset (1)";
    if (completions && *completions >= 0 && *completions < pods) {
        pods = *completions;
        source = field_path(field, "completions") + "=" + std::to_string(*completions);
    }
    out.pods = saturating_product(pods, copies);
    out.pods_source = copies_source.empty() ? source : copies_source + " x " + source;
}

void read_replica_specs(const json::object& spec, std::string_view key, const std::string& spec_field,
                        const std::string& spec_pointer, WorkloadSpec& workload) {
    const json::object* replicas = object_field(spec, key, spec_field);
    std::string field = field_path(spec_field, key);
    if (replicas == nullptr) throw SpecError{field, "missing: the workload lists no replica specs"};
    for (const auto& [role, value] : *replicas) {
        std::string role_field = field_path(field, std::string(role));
        const json::object& replica = object_element(value, role_field);
        PodTemplate tmpl =
            pod_template(replica, "template", role_field,
                         spec_pointer + "/" + escape_pointer_token(key) + "/" + escape_pointer_token(role));
        tmpl.role = std::string(role);
        auto count = int_field(replica, "replicas", role_field);
        if (count && *count < 0) throw SpecError{field_path(role_field, "replicas"), "must not be negative"};
        tmpl.pods = count.value_or(1);
        tmpl.pods_source = count ? field_path(role_field, "replicas") + "=" + std::to_string(*count)
                                 : field_path(role_field, "replicas") + " unset (1)";
        workload.templates.push_back(std::move(tmpl));
    }
}

}  // namespace

WorkloadSpec read_workload_spec(const json::value& value) {
    if (!value.is_object()) throw SpecError{"", "expected a Kubernetes object (a mapping with apiVersion and kind)"};
    const json::object& object = value.get_object();
    WorkloadSpec workload;
    workload.api_version = string_field(object, "apiVersion", "").value_or("");
    workload.kind = string_field(object, "kind", "").value_or("");
    if (workload.kind.empty()) throw SpecError{"kind", "missing"};
    if (workload.api_version.empty()) throw SpecError{"apiVersion", "missing"};
    if (const json::object* metadata = object_field(object, "metadata", "")) {
        workload.name = string_field(*metadata, "name", "metadata")
                            .value_or(string_field(*metadata, "generateName", "metadata").value_or(""));
        workload.namespace_name = string_field(*metadata, "namespace", "metadata").value_or("");
    }

    const std::string group = group_of(workload.api_version);
    const std::string& kind = workload.kind;
    bool pod = group.empty() && kind == "Pod";
    bool job = group == "batch" && kind == "Job";
    bool jobset = group == "jobset.x-k8s.io" && kind == "JobSet";
    bool mpijob = group == "kubeflow.org" && kind == "MPIJob";
    bool pytorchjob = group == "kubeflow.org" && kind == "PyTorchJob";
    workload.supported = pod || job || jobset || mpijob || pytorchjob;
    if (!workload.supported) return workload;
    workload.is_pod = pod;
    workload.is_mpi_job = mpijob;

    const json::object* spec = object_field(object, "spec", "");
    if (spec == nullptr) throw SpecError{"spec", "missing"};
    if (pod) {
        PodTemplate tmpl;
        tmpl.field = "spec";
        tmpl.pointer = "/spec";
        tmpl.spec = spec;
        tmpl.metadata = object_field(object, "metadata", "");
        tmpl.pods_unknown_reason = "a bare Pod does not say how many pods its job has";
        workload.templates.push_back(std::move(tmpl));
    } else if (job) {
        PodTemplate tmpl;
        read_job_spec(*spec, "spec", "/spec", tmpl, 1, "");
        workload.templates.push_back(std::move(tmpl));
    } else if (jobset) {
        const json::array* replicated = array_field(*spec, "replicatedJobs", "spec");
        if (replicated == nullptr) throw SpecError{"spec.replicatedJobs", "missing"};
        for (std::size_t i = 0; i < replicated->size(); ++i) {
            std::string field = field_path("spec.replicatedJobs", i);
            const json::object& entry = object_element((*replicated)[i], field);
            auto replicas = int_field(entry, "replicas", field);
            if (replicas && *replicas < 0) throw SpecError{field_path(field, "replicas"), "must not be negative"};
            const json::object* job_template = object_field(entry, "template", field);
            std::string job_field = field_path(field, "template");
            if (job_template == nullptr) throw SpecError{job_field, "missing"};
            const json::object* job_spec = object_field(*job_template, "spec", job_field);
            std::string job_spec_field = field_path(job_field, "spec");
            if (job_spec == nullptr) throw SpecError{job_spec_field, "missing"};
            std::string copies = replicas ? field_path(field, "replicas") + "=" + std::to_string(*replicas)
                                          : field_path(field, "replicas") + " unset (1)";
            PodTemplate tmpl;
            read_job_spec(*job_spec, job_spec_field, "/spec/replicatedJobs/" + std::to_string(i) + "/template/spec",
                          tmpl, replicas.value_or(1), copies);
            tmpl.role = string_field(entry, "name", field).value_or("");
            workload.templates.push_back(std::move(tmpl));
        }
    } else {
        read_replica_specs(*spec, mpijob ? "mpiReplicaSpecs" : "pytorchReplicaSpecs", "spec", "/spec", workload);
    }
    return workload;
}

}  // namespace launchguard::kubernetes
