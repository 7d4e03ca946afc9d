// The pod templates of a workload object and how many pods each starts:
// a Pod is its own template; Job, JobSet, MPIJob and PyTorchJob hold theirs
// at known paths. Templates carry both the dotted field path users read
// ("spec.mpiReplicaSpecs.Worker.template.spec") and the JSON Pointer a patch
// targets ("/spec/mpiReplicaSpecs/Worker/template/spec").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace launchguard::kubernetes {

struct PodTemplate {
    std::string field;    // dotted path of the PodSpec
    std::string pointer;  // RFC 6901 pointer of the PodSpec
    const boost::json::object* spec = nullptr;
    const boost::json::object* metadata = nullptr;  // the template's (or Pod's) metadata, may be null
    std::string role;  // "Launcher", "Worker", "Master", a replicated job's name, "" for a Job or Pod
    // Pods this template starts, and what says so; nullopt when not written
    // in a form launchguard reads.
    std::optional<long long> pods;
    std::string pods_source;
    std::string pods_unknown_reason;
};

struct WorkloadSpec {
    std::string api_version;
    std::string kind;
    std::string name;
    std::string namespace_name;
    bool supported = false;
    bool is_pod = false;
    bool is_mpi_job = false;
    std::vector<PodTemplate> templates;
};

// The labels and annotations of a Pod's own metadata that say how many pods
// its job has: the JobSet controller writes the number of Jobs of the JobSet
// (each starting at least one pod) on every pod it creates, as both a label
// and an annotation. Nothing else of the top-level metadata is read by the
// review, which is what lets the webhook cache reviews across the pods of
// one Job: review_input.h makes the key from these keys.
inline constexpr std::string_view kJobSetGlobalReplicas = "jobset.sigs.k8s.io/global-replicas";
inline constexpr std::string_view kJobSetReplicatedJobReplicas = "jobset.sigs.k8s.io/replicatedjob-replicas";
inline constexpr std::string_view kShapeMetadataKeys[] = {kJobSetGlobalReplicas, kJobSetReplicatedJobReplicas};

// Throws SpecError for a supported kind with malformed fields.
WorkloadSpec read_workload_spec(const boost::json::value& object);

// RFC 6901: "~" -> "~0" then "/" -> "~1".
std::string escape_pointer_token(std::string_view token);

}  // namespace launchguard::kubernetes
