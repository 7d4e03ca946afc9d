#include "kubernetes/workload_review.h"

#include <algorithm>
#include <charconv>
#include <memory>

#include "kubernetes/json_patch.h"
#include "kubernetes/launcher_patch.h"
#include "kubernetes/pod_launch.h"
#include "kubernetes/spec_fields.h"
#include "kubernetes/workload_spec.h"
#include "rules/rule.h"
#include "util/path.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

std::optional<int> positive_number(std::string_view text) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0) return std::nullopt;
    return value;
}

std::optional<int> whole_number(const Environment& env, std::string_view name) {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return positive_number(it->second);
}

// The number of Jobs of the JobSet that created this Pod, from the label
// (or annotation) its controller writes on every pod. All the Jobs of a
// JobSet run at once and each starts at least one pod, so it is a lower
// bound of the job's pods; the pods per Job (its parallelism) are not on
// the Pod.
std::optional<std::pair<int, std::string>> jobset_jobs(const json::object* metadata) {
    if (metadata == nullptr) return std::nullopt;
    for (std::string_view where : {"labels", "annotations"}) {
        const json::value* entries = metadata->if_contains(where);
        if (entries == nullptr || !entries->is_object()) continue;
        for (std::string_view key : {kJobSetGlobalReplicas, kJobSetReplicatedJobReplicas}) {
            const json::value* value = entries->get_object().if_contains(key);
            if (value == nullptr || !value->is_string()) continue;
            if (auto jobs = positive_number(value->get_string())) {
                return std::pair{*jobs, "metadata." + std::string(where) + "[" + std::string(key) + "]=" +
                                            std::to_string(*jobs) + " (Jobs of the JobSet, each at least one pod)"};
            }
        }
    }
    return std::nullopt;
}

// Nodes (pods, one per node as GPU training pods are placed), tasks and
// GPUs of the whole workload, from its replica counts; a bare Pod only
// from what its controller wrote into it.
JobShape workload_shape(const WorkloadSpec& workload, const std::vector<ContainerLaunch>& containers,
                        const std::vector<ContainerEnv>& envs) {
    JobShape shape;
    std::map<const PodTemplate*, int> gpus_per_pod;
    for (const auto& c : containers) {
        if (c.gpus > 0) gpus_per_pod[c.pod] += c.gpus;
    }
    std::optional<int> mpi_ranks;
    std::optional<int> torch_nodes;
    std::optional<int> torch_per_node;
    std::optional<int> env_nodes;
    std::string env_nodes_source;
    for (std::size_t i = 0; i < containers.size(); ++i) {
        const ShellLaunch& shell = containers[i].shell;
        if (shell.mpi_ranks) mpi_ranks = shell.mpi_ranks;
        if (shell.torch_nnodes) torch_nodes = shell.torch_nnodes;
        if (shell.torch_nproc_per_node) torch_per_node = shell.torch_nproc_per_node;
        if (containers[i].gpus == 0) continue;
        if (auto n = whole_number(envs[i].values, "PET_NNODES")) {
            env_nodes = n;
            env_nodes_source = containers[i].field + " env PET_NNODES";
        } else if (auto w = whole_number(envs[i].values, "WORLD_SIZE");
                   w && envs[i].values.find("PET_NPROC_PER_NODE") == envs[i].values.end()) {
            env_nodes = w;
            env_nodes_source = containers[i].field + " env WORLD_SIZE (one process per pod)";
        }
    }

    if (!workload.is_pod) {
        long long pods = 0;
        long long gpus = 0;
        std::vector<std::string> sources;
        for (const auto& [pod, per_pod] : gpus_per_pod) {
            pods = saturating_sum(pods, *pod->pods);
            gpus = saturating_sum(gpus, saturating_product(*pod->pods, per_pod));
            sources.push_back(pod->pods_source);
        }
        std::string source;
        for (const auto& s : sources) source += (source.empty() ? "" : " + ") + s;
        shape.nodes = Fact<int>::known(saturated_int(pods), source + " (GPU pods, one per node)");
        shape.total_gpus = Fact<int>::known(saturated_int(gpus), source + " x GPUs per pod");
    } else if (env_nodes || torch_nodes) {
        int nodes = env_nodes ? *env_nodes : *torch_nodes;
        std::string source = env_nodes ? env_nodes_source : "torchrun --nnodes";
        int per_pod = gpus_per_pod.empty() ? 0 : gpus_per_pod.begin()->second;
        shape.nodes = Fact<int>::known(nodes, source);
        shape.total_gpus =
            Fact<int>::known(saturated_int(saturating_product(nodes, per_pod)), source + " x GPUs per pod");
    } else if (auto jobs = jobset_jobs(workload.templates.front().metadata); jobs && jobs->first > 1) {
        // A lower bound decides "more than one node", not a GPU total that a
        // rule compares with a threshold: that stays unknown.
        shape.nodes = Fact<int>::known(jobs->first, jobs->second);
        shape.total_gpus = Fact<int>::unknown("a JobSet pod says how many Jobs run (" + jobs->second +
                                              "), not how many pods each Job starts");
    } else {
        std::string why = "a bare Pod whose labels, env and command do not say how many pods its job has";
        shape.nodes = Fact<int>::unknown(why);
        shape.total_gpus = Fact<int>::unknown(why);
    }
    if (mpi_ranks) {
        shape.tasks = Fact<int>::known(*mpi_ranks, "mpirun -np");
    } else if (torch_nodes && torch_per_node) {
        shape.tasks = Fact<int>::known(saturated_int(saturating_product(*torch_nodes, *torch_per_node)),
                                       "torchrun --nnodes x --nproc-per-node");
    } else {
        shape.tasks = Fact<int>::unknown("no mpirun -np or torchrun --nnodes/--nproc-per-node in the spec");
    }
    return shape;
}

LaunchContext container_context(const ContainerLaunch& container, const ContainerEnv& env, const JobShape& shape,
                                std::shared_ptr<const PodResources> resources) {
    LaunchContext ctx;
    ctx.runtime = Runtime::kubernetes;
    ctx.env = Fact<Environment>::known(env.values, container.field + " env, envFrom, command and args");
    ctx.env_unknown = env.unknown;
    ctx.env_unread_sources = env.unread;
    ctx.files = container.files;
    const std::string node = "a pod spec does not describe its node; node facts come from the profile";
    ctx.cpu_mask = Fact<CpuSet>::unknown("the kubelet picks the pod's CPUs when it starts");
    ctx.gpus = Fact<std::vector<Gpu>>::unknown("the device plugin picks the pod's GPUs when it starts");
    ctx.topology = Fact<NodeTopology>::unknown(node);
    ctx.interfaces = Fact<std::vector<NetInterface>>::unknown(node);
    ctx.job = shape;
    ctx.comm_backend = container.comm_backend;
    ctx.container = container.facts;
    ctx.pod_resources = Fact<std::shared_ptr<const PodResources>>::known(std::move(resources), container.pod->field);
    ctx.pod_judged_container = container.resources_index;
    return ctx;
}

// Whether a patch of the env list decides the variable: a shell export or
// an MPI launcher's -x sets it after the env list, and an envFrom source
// may hold it once the entry is removed.
bool env_patchable(const ContainerEnv& env, const RemediationOp& op) {
    auto source = env.sources.find(op.name);
    bool absent = source == env.sources.end();
    if (op.kind == RemediationOp::Kind::set_env) {
        // An env entry beats envFrom, but not what the shell exports later.
        return absent || source->second == EnvSource::env_list || source->second == EnvSource::env_from;
    }
    return !absent && source->second == EnvSource::env_list && !env.env_from;
}

bool mount_patchable(const ContainerLaunch& container, const RemediationOp& op) {
    const PodMount* mount = container.files->mount_for(op.container_path);
    if (mount == nullptr) return true;
    // The path is already a mount point of another volume: Kubernetes
    // rejects a second mount at the same path.
    bool same_point = mount->mount_path == normalize_absolute(op.container_path);
    return !same_point || (mount->source == PodMount::Source::host_path && mount->host_path == op.host_path);
}

// `launcher`: the container whose MPI launcher starts this one's ranks
// (launcher_patch.h), which then carries the variables it sets.
void apply_ops(PodPatchBuilder& builder, LauncherPatcher& launchers, const ContainerLaunch& container,
               const ContainerLaunch* launcher, const std::vector<RemediationOp>& ops) {
    for (const auto& op : ops) {
        switch (op.kind) {
            case RemediationOp::Kind::set_env:
                if (launcher != nullptr) {
                    launchers.set_env(builder, *launcher, op.name, op.value);
                } else {
                    builder.set_env(container.pointer, op.name, op.value);
                }
                break;
            case RemediationOp::Kind::unset_env:
                builder.unset_env(container.pointer, op.name);
                break;
            case RemediationOp::Kind::mount_file:
                builder.mount_host_file(container.pod->pointer, container.pointer, op.host_path, op.container_path);
                break;
            case RemediationOp::Kind::shm_size:
                builder.memory_shm(container.pod->pointer, container.pointer, op.bytes);
                break;
            case RemediationOp::Kind::add_capability:
                builder.add_capability(container.pointer, op.name);
                break;
            case RemediationOp::Kind::manual:
                break;
        }
    }
}

// An unset that the launcher's own option makes impossible becomes the
// instruction to remove that option.
void say_where_launcher_sets(Finding& finding, const ContainerLaunch& launcher) {
    for (auto& op : finding.remediation) {
        if (auto removal = launcher_removal(launcher, op); !removal.empty()) op = RemediationOp::manual_step(removal);
    }
}

Decision stricter(Decision a, Decision b) {
    auto rank = [](Decision d) { return d == Decision::block ? 2 : d == Decision::patch ? 1 : 0; };
    return rank(a) >= rank(b) ? a : b;
}

void check_container_count(const WorkloadSpec& workload) {
    std::size_t total = 0;
    for (const auto& tmpl : workload.templates) {
        for (std::string_view key : {"initContainers", "containers"}) {
            const json::value* list = tmpl.spec->if_contains(key);
            if (list != nullptr && list->is_array()) total += list->get_array().size();
        }
        if (total > kMaxContainersPerObject) {
            throw SpecError{field_path(tmpl.field, "containers"),
                            "the object holds more than " + std::to_string(kMaxContainersPerObject) +
                                " containers (init containers included, over all its pod templates), the most "
                                "launchguard judges in one object: refused"};
        }
    }
}

// What gets around the launch gate, as findings: refused, since a
// container that can write the gate or cover its folder turns every other
// finding into advice.
void add_gate_bypasses(const WorkloadSpec& workload, const ReviewOptions& options, Report& report) {
    if (options.mode == Mode::off) return;
    const std::string image = !options.gate_image.empty() ? options.gate_image
                              : options.gate              ? options.gate->image
                                                          : std::string();
    for (const auto& tmpl : workload.templates) {
        for (auto& bypass : gate_bypasses(*tmpl.spec, tmpl.field, image)) {
            Finding finding;
            finding.rule = std::string(kGateBypassRule);
            finding.severity = Severity::error;
            finding.action = options.mode == Mode::warn ? Action::warn : Action::block;
            finding.message = "gets around the launch gate: " + bypass;
            finding.evidence.emplace_back("template", tmpl.field);
            if (finding.action == Action::block) report.decision = Decision::block;
            report.findings.push_back(std::move(finding));
        }
    }
}

WorkloadReview review_supported(const json::value& object, const WorkloadSpec& workload, const Profile& profile,
                                const ReviewOptions& options, WorkloadReview review) {
    check_container_count(workload);
    std::vector<ContainerLaunch> containers;
    // Read once per pod template (a malformed quantity is an error even where
    // no GPU is requested) and shared by the contexts of its containers.
    std::map<const PodTemplate*, std::shared_ptr<const PodResources>> resources;
    static const ConfigMapData kNoConfigMaps;
    auto in_namespace = options.config_maps.find(workload.namespace_name);
    const ConfigMapData& config_maps = in_namespace == options.config_maps.end() ? kNoConfigMaps : in_namespace->second;
    for (const auto& tmpl : workload.templates) {
        auto read = read_containers(tmpl, config_maps);
        for (auto& c : read) containers.push_back(std::move(c));
        resources[&tmpl] = std::make_shared<const PodResources>(pod_resources(tmpl));
    }
    review.requests_gpus = std::any_of(containers.begin(), containers.end(), [](const auto& c) { return c.gpus > 0; });
    review.report.profile = profile.name;
    review.report.profile_origin = profile.origin;
    review.report.mode = options.mode;
    if (!review.requests_gpus) {
        review.note = "no container requests a GPU (nvidia.com/gpu, amd.com/gpu): allowed untouched";
        return review;
    }

    // What an MPI launcher passes reaches every rank: its own and the workers'.
    ContainerEnv launcher_ranks;
    // The ranks on the workers run what the launcher's command starts.
    Fact<CommBackend> launcher_backend;
    for (const auto& c : containers) {
        if (workload.is_mpi_job && c.pod->role == "Launcher" && c.comm_backend) launcher_backend = c.comm_backend;
        if (c.shell.rank_exports.empty()) continue;
        if (workload.is_mpi_job && c.pod->role == "Launcher") {
            launcher_ranks = overlay_environment(std::move(launcher_ranks), rank_environment(c));
        }
    }
    std::vector<ContainerEnv> envs;
    for (const auto& c : containers) {
        ContainerEnv env = c.env;
        if (workload.is_mpi_job && c.pod->role == "Worker") env = overlay_environment(std::move(env), launcher_ranks);
        if (!c.shell.rank_exports.empty()) env = overlay_environment(std::move(env), rank_environment(c));
        envs.push_back(std::move(env));
    }
    JobShape shape = workload_shape(workload, containers, envs);

    PodPatchBuilder builder(object);
    LauncherPatcher launchers;
    Report& merged = review.report;
    add_gate_bypasses(workload, options, merged);
    for (std::size_t i = 0; i < containers.size(); ++i) {
        const ContainerLaunch& container = containers[i];
        if (container.gpus == 0) continue;
        LaunchContext ctx = container_context(container, envs[i], shape, resources.at(container.pod));
        if (workload.is_mpi_job && container.pod->role == "Worker" && !ctx.comm_backend && launcher_backend) {
            ctx.comm_backend = launcher_backend;
        }
        EvaluationOptions evaluation;
        evaluation.mode = options.mode;
        evaluation.scopes = kScopeKubernetes;
        evaluation.applicable = all_remediation_kinds();
        evaluation.fix_blocking = options.fix_blocking;
        const ContainerEnv& env = envs[i];
        const ContainerLaunch* launcher = rank_launcher(workload, containers, container);
        evaluation.can_apply_op = [&](const RemediationOp& op) {
            switch (op.kind) {
                case RemediationOp::Kind::set_env:
                    return launcher != nullptr ? launcher_can_apply(*launcher, op) : env_patchable(env, op);
                case RemediationOp::Kind::unset_env:
                    return (launcher == nullptr || launcher_can_apply(*launcher, op)) && env_patchable(env, op);
                case RemediationOp::Kind::mount_file:
                    return mount_patchable(container, op);
                default:
                    return true;
            }
        };
        Report report = evaluate(ctx, profile, evaluation);
        merged.rules_evaluated = std::max(merged.rules_evaluated, report.rules_evaluated);
        merged.decision = stricter(merged.decision, report.decision);
        for (auto& finding : report.findings) {
            if (launcher != nullptr) say_where_launcher_sets(finding, *launcher);
            finding.evidence.insert(finding.evidence.begin(),
                                    std::pair<std::string, std::string>("template", container.field));
            if (!container.name.empty()) {
                finding.evidence.insert(finding.evidence.begin() + 1,
                                        std::pair<std::string, std::string>("container", container.name));
            }
            merged.findings.push_back(std::move(finding));
        }
        for (auto& unknown : report.unknowns) {
            unknown.reason = container.field + ": " + unknown.reason;
            merged.unknowns.push_back(std::move(unknown));
        }
        // The reason names the container already (the backend's source).
        for (auto& skipped : report.not_applicable) merged.not_applicable.push_back(std::move(skipped));
        apply_ops(builder, launchers, container, launcher, report.patch);
        merged.patch.insert(merged.patch.end(), report.patch.begin(), report.patch.end());
    }
    if (options.gate) {
        for (const auto& tmpl : workload.templates) {
            std::vector<const ContainerLaunch*> gpu_containers;
            for (const auto& c : containers) {
                if (c.pod == &tmpl && c.gpus > 0) gpu_containers.push_back(&c);
            }
            if (gpu_containers.empty()) continue;
            const std::size_t before = builder.patch().size();
            auto notes = inject_gate(builder, tmpl, gpu_containers, *options.gate, profile, options.mode);
            if (builder.patch().size() > before) ++review.gate_templates;
            review.gate_operations += builder.patch().size() - before;
            for (auto& note : notes) review.gate_notes.push_back(std::move(note));
        }
    }
    review.patch = builder.patch();
    return review;
}

void collect_node_labels(const json::object& spec, std::map<std::string, std::string>& labels) {
    if (const json::value* selector = spec.if_contains("nodeSelector"); selector && selector->is_object()) {
        for (const auto& [key, value] : selector->get_object()) {
            if (value.is_string()) labels[std::string(key)] = std::string(value.get_string());
        }
    }
    const json::value* affinity = spec.if_contains("affinity");
    if (affinity == nullptr || !affinity->is_object()) return;
    const json::value* node = affinity->get_object().if_contains("nodeAffinity");
    if (node == nullptr || !node->is_object()) return;
    const json::value* required = node->get_object().if_contains("requiredDuringSchedulingIgnoredDuringExecution");
    if (required == nullptr || !required->is_object()) return;
    const json::value* terms = required->get_object().if_contains("nodeSelectorTerms");
    if (terms == nullptr || !terms->is_array()) return;
    for (const auto& term : terms->get_array()) {
        if (!term.is_object()) continue;
        const json::value* expressions = term.get_object().if_contains("matchExpressions");
        if (expressions == nullptr || !expressions->is_array()) continue;
        for (const auto& expression : expressions->get_array()) {
            if (!expression.is_object()) continue;
            const auto& e = expression.get_object();
            const json::value* key = e.if_contains("key");
            const json::value* op = e.if_contains("operator");
            const json::value* values = e.if_contains("values");
            if (key && key->is_string() && op && op->is_string() && op->get_string() == "In" && values &&
                values->is_array() && values->get_array().size() == 1 && values->get_array()[0].is_string()) {
                labels[std::string(key->get_string())] = std::string(values->get_array()[0].get_string());
            }
        }
    }
}

}  // namespace

Result<WorkloadReview> review_workload(const json::value& object, const Profile& profile,
                                       const ReviewOptions& options) {
    try {
        WorkloadSpec workload = read_workload_spec(object);
        WorkloadReview review;
        review.api_version = workload.api_version;
        review.kind = workload.kind;
        review.name = workload.name;
        review.namespace_name = workload.namespace_name;
        review.supported = workload.supported;
        if (!workload.supported) {
            review.note =
                workload.kind + " (" + workload.api_version + ") is not a workload launchguard judges: skipped";
            review.report.profile = profile.name;
            review.report.profile_origin = profile.origin;
            review.report.mode = options.mode;
            return review;
        }
        return review_supported(object, workload, profile, options, std::move(review));
    } catch (const SpecError& e) {
        Error error = make_error(e.message);
        error.field = e.field;
        return error;
    } catch (const std::exception& e) {
        return make_error(std::string("could not review the object: ") + e.what());
    }
}

std::map<std::string, std::string> requested_node_labels(const json::value& object) {
    std::map<std::string, std::string> labels;
    try {
        WorkloadSpec workload = read_workload_spec(object);
        for (const auto& tmpl : workload.templates) collect_node_labels(*tmpl.spec, labels);
    } catch (const SpecError&) {
        // A malformed object requests no labels; review_workload reports
        // the fault itself.
    }
    return labels;
}

}  // namespace launchguard::kubernetes
