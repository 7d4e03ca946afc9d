// Judging a Kubernetes workload at admission, from its spec alone: the
// spec becomes a LaunchContext (Runtime::kubernetes) whose unknowns stay
// unknown (an image's content is never "missing"), the engine runs the
// kScopeKubernetes rules on it, and the remediation becomes an RFC 6902
// JSON Patch against the object. The webhook (webhook/) and
// `launchguard review` are thin front ends over this; nothing here knows HTTP.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include "engine/engine.h"
#include "kubernetes/gate_injection.h"
#include "profile/profile.h"
#include "util/error.h"

namespace launchguard::kubernetes {

// The most containers (init containers included, over all its pod templates)
// one object may hold: judging costs time and memory linear in their number,
// and an object beyond this is refused as unreadable (an error naming the
// count), never allowed unjudged.
inline constexpr std::size_t kMaxContainersPerObject = 4096;

struct ReviewOptions {
    Mode mode = Mode::enforce;
    // Patch blocking findings the patch can fully fix (the mutating webhook,
    // `review --patch`), as the enroot hook does; the validating webhook
    // leaves it off and denies what remains.
    bool fix_blocking = false;
    // ConfigMaps whose data the reviewer has (`launchguard review` collects
    // those in its inputs), by namespace and then name: an envFrom or a volume
    // of one of these is read instead of unknown. A pod reads ConfigMaps of its
    // own namespace only, so a workload is judged with those of its
    // metadata.namespace; "" is the namespace of a document that names none
    // (the one `kubectl apply` puts it in), which matches only other
    // documents that name none. The webhook sees one object and leaves it empty.
    std::map<std::string, std::map<std::string, std::map<std::string, std::string>>> config_maps;
    // Add the launch gate to every pod template with GPU containers
    // (gate_injection.h), judging in `mode`: the mutating webhook where the
    // site enables it, `review --gate-image`. Empty: no gate.
    std::optional<GateOptions> gate;
    // The image the gate's install container must run for a pod's gate to
    // count as the site's (the validating webhook, where the site enables
    // the gate); "" takes gate.image, or any image without one. What in a
    // pod gets around its gate (gate_layout.h, gate_bypasses) is a finding
    // of rule k8s.gate-bypass, blocking unless the mode only warns.
    std::string gate_image;
};

struct WorkloadReview {
    std::string api_version;
    std::string kind;
    std::string name;
    std::string namespace_name;
    // False for kinds launchguard does not judge (Service, ConfigMap, ...):
    // `note` says so, the report is empty and nothing is patched.
    bool supported = false;
    // False when no container requests a GPU: such a pod is allowed untouched.
    bool requests_gpus = false;
    std::string note;
    // The engine's report over every pod template; findings name the template
    // (evidence "template": "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]").
    Report report;
    // RFC 6902 operations relative to the object's root, for the findings the
    // engine decided to patch; empty when there is nothing to patch. Applying
    // it and reviewing the result again yields an empty patch.
    boost::json::array patch;
    // With ReviewOptions::gate: the pod templates the gate was added to, and
    // what the review says about where it could not go (a container whose
    // own postStart hook leaves the gate no place).
    std::size_t gate_templates = 0;
    std::size_t gate_operations = 0;  // the operations of `patch` that add the gate (its last ones)
    std::vector<std::string> gate_notes;
};

// Pod, and the pod templates of Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2),
// MPIJob (kubeflow.org/v2beta1) and PyTorchJob (kubeflow.org/v1). An object that
// is not a JSON object, or a supported kind whose spec is malformed, is an
// error naming the field ("spec.template.spec.containers[1].env[0]: expected
// an object"); an unsupported kind is not an error.
Result<WorkloadReview> review_workload(const boost::json::value& object, const Profile& profile,
                                       const ReviewOptions& options);

// Node labels the workload's pods require (nodeSelector, and single-value
// `In` terms of required node affinity), merged over every template: what a
// site's profile selection keys on (node.kubernetes.io/instance-type,
// nvidia.com/gpu.product). Empty for unsupported kinds.
std::map<std::string, std::string> requested_node_labels(const boost::json::value& object);

}  // namespace launchguard::kubernetes
