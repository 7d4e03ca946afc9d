#include "kubernetes/pod_launch.h"

#include <algorithm>

#include "context/comm_backend.h"
#include "kubernetes/gate_injection.h"
#include "kubernetes/quantity.h"
#include "kubernetes/spec_fields.h"
#include "util/path.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

inline constexpr std::uint64_t kRuntimeDefaultShm = 64ULL << 20;

std::vector<std::string> string_list(const json::object& parent, std::string_view key, std::string_view where) {
    std::vector<std::string> out;
    const json::array* list = array_field(parent, key, where);
    if (list == nullptr) return out;
    std::string field = field_path(where, key);
    for (std::size_t i = 0; i < list->size(); ++i) {
        const json::value& item = (*list)[i];
        if (!item.is_string()) throw SpecError{field_path(field, i), "expected a string"};
        out.emplace_back(item.get_string());
    }
    return out;
}

// GPU and RDMA device counts come from limits (extended resources must have
// limits; requests, when written, equal them).
const json::object* device_resources(const json::object& container, std::string_view where) {
    const json::object* resources = object_field(container, "resources", where);
    if (resources == nullptr) return nullptr;
    std::string field = field_path(where, "resources");
    if (const json::object* limits = object_field(*resources, "limits", field)) return limits;
    return object_field(*resources, "requests", field);
}

int gpu_count(const json::object* devices, std::string_view where) {
    if (devices == nullptr) return 0;
    int total = 0;
    for (std::string_view resource : {"nvidia.com/gpu", "amd.com/gpu"}) {
        auto text = scalar_text(*devices, resource, where);
        if (!text) continue;
        auto count = parse_quantity_bytes(*text);
        if (!count || *count < 0 || *count > 1024) {
            throw SpecError{field_path(where, resource), "expected a whole number of GPUs, got '" + *text + "'"};
        }
        total += static_cast<int>(*count);
    }
    return total;
}

bool is_rdma_resource(std::string_view name) {
    return name.starts_with("rdma/") || name == "nvidia.com/hostdev" || name.starts_with("mellanox.com/") ||
           name.starts_with("nvidia.com/rdma");
}

ContainerEnv read_environment(const json::object& container, const std::string& where, const ShellLaunch& shell,
                              const ConfigMapData& config_maps) {
    ContainerEnv env;
    for_each_object(container, "envFrom", where, [&](const json::object& item, const std::string& item_field) {
        std::string what = "envFrom";
        std::string prefix = string_field(item, "prefix", item_field).value_or("");
        for (std::string_view kind : {"configMapRef", "secretRef"}) {
            const json::object* ref = object_field(item, kind, item_field);
            if (ref == nullptr) continue;
            auto name = string_field(*ref, "name", field_path(item_field, kind)).value_or("?");
            what = std::string(kind == "configMapRef" ? "ConfigMap " : "Secret ") + name + " (envFrom)";
            auto data = kind == "configMapRef" ? config_maps.find(name) : config_maps.end();
            if (data != config_maps.end()) {
                for (const auto& [key, value] : data->second) {
                    env.values[prefix + key] = value;
                    env.sources[prefix + key] = EnvSource::env_from;
                }
                env.env_from = true;
                return;
            }
        }
        env.unread.push_back(item_field + ": " + what + " may set any variable, and the review does not have it");
        env.env_from = true;
    });
    for_each_object(container, "env", where, [&](const json::object& item, const std::string& item_field) {
        auto name = string_field(item, "name", item_field);
        if (!name || name->empty()) throw SpecError{field_path(item_field, "name"), "missing"};
        env.sources[*name] = EnvSource::env_list;
        auto value = string_field(item, "value", item_field);
        std::string entry = item_field + " (" + *name + ")";
        if (const json::object* from = object_field(item, "valueFrom", item_field)) {
            // fieldRef, secretKeyRef, configMapKeyRef, resourceFieldRef: one
            // value, read when the pod starts; it can set only this name.
            std::string kind =
                from->empty() ? std::string("valueFrom") : "valueFrom." + std::string(from->begin()->key());
            env.values.erase(*name);
            env.unknown[*name] = entry + ": " + kind + " is read when the pod starts";
        } else if (value && value->find("$(") != std::string::npos) {
            // Kubernetes expands $(VAR) from other variables: not read here.
            env.values.erase(*name);
            env.unknown[*name] = entry + ": the kubelet expands its $(...) when the pod starts";
        } else {
            env.values[*name] = value.value_or("");
            env.unknown.erase(*name);
        }
    });
    std::string shell_field = where + " command and args";
    for (const auto& set : shell.exports) {
        env.sources[set.name] = EnvSource::shell;
        // Each export sees what the ones before it set.
        std::optional<std::string> value = set.value;
        if (!value && set.pattern) value = expand_variables(*set.pattern, env.values);
        if (value) {
            env.values[set.name] = *value;
            env.unknown.erase(set.name);
        } else {
            env.values.erase(set.name);
            env.unknown[set.name] = shell_field + ", " + set.origin + ": " + set.name + "=" +
                                    (set.pattern ? *set.pattern + " names a variable the spec does not set"
                                                 : set.why_unknown + " is computed when the container runs");
        }
    }
    for (const auto& source : shell.open_sources) env.unread.push_back(shell_field + ", " + source);
    return env;
}

std::optional<std::uint64_t> pod_memory_limit(const json::object& spec, std::string_view where) {
    std::uint64_t total = 0;
    const json::array* containers = array_field(spec, "containers", where);
    if (containers == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < containers->size(); ++i) {
        std::string field = field_path(field_path(where, "containers"), i);
        const json::object& container = object_element((*containers)[i], field);
        const json::object* resources = object_field(container, "resources", field);
        const json::object* limits =
            resources ? object_field(*resources, "limits", field_path(field, "resources")) : nullptr;
        auto text = limits ? scalar_text(*limits, "memory", field_path(field, "resources.limits")) : std::nullopt;
        auto bytes = text ? parse_quantity_bytes(*text) : std::nullopt;
        if (!bytes) return std::nullopt;
        total += static_cast<std::uint64_t>(*bytes);
    }
    return total;
}

struct VolumeInfo {
    PodMount::Source source = PodMount::Source::other;
    std::string description;
    std::string host_path;
    std::string host_type;
    std::optional<std::vector<std::string>> items;
    std::optional<std::map<std::string, std::string>> contents;  // a ConfigMap the review has: path -> data
    bool memory = false;
    std::optional<std::uint64_t> size_limit;
};

VolumeInfo read_volume(const json::object& volume, const std::string& where, const ConfigMapData& config_maps) {
    VolumeInfo info;
    if (const json::object* host = object_field(volume, "hostPath", where)) {
        info.source = PodMount::Source::host_path;
        info.host_path = string_field(*host, "path", field_path(where, "hostPath")).value_or("");
        if (info.host_path.empty()) throw SpecError{field_path(where, "hostPath.path"), "missing"};
        info.host_type = string_field(*host, "type", field_path(where, "hostPath")).value_or("");
        info.description = "hostPath " + info.host_path + (info.host_type.empty() ? "" : " (" + info.host_type + ")");
        return info;
    }
    for (std::string_view kind : {"configMap", "secret"}) {
        const json::object* source = object_field(volume, kind, where);
        if (source == nullptr) continue;
        std::string field = field_path(where, kind);
        info.source = kind == "configMap" ? PodMount::Source::config_map : PodMount::Source::secret;
        auto name = string_field(*source, kind == "configMap" ? "name" : "secretName", field).value_or("?");
        info.description = std::string(kind == "configMap" ? "ConfigMap " : "Secret ") + name;
        auto data = kind == "configMap" ? config_maps.find(name) : config_maps.end();
        if (data != config_maps.end()) info.contents.emplace();
        if (array_field(*source, "items", field) != nullptr) {
            std::vector<std::string> paths;
            for_each_object(*source, "items", field, [&](const json::object& item, const std::string& item_field) {
                auto path = string_field(item, "path", item_field);
                auto key = string_field(item, "key", item_field);
                if (!path) throw SpecError{field_path(item_field, "path"), "missing"};
                paths.push_back(*path);
                if (info.contents && key && data->second.count(*key) != 0) {
                    (*info.contents)[normalize_absolute(*path).substr(1)] = data->second.at(*key);
                }
            });
            info.items = std::move(paths);
        } else if (info.contents) {
            for (const auto& [key, value] : data->second) (*info.contents)[key] = value;
        }
        return info;
    }
    if (const json::object* empty = object_field(volume, "emptyDir", where)) {
        info.source = PodMount::Source::empty_dir;
        std::string field = field_path(where, "emptyDir");
        info.memory = string_field(*empty, "medium", field).value_or("") == "Memory";
        if (auto limit = scalar_text(*empty, "sizeLimit", field)) {
            auto bytes = parse_quantity_bytes(*limit);
            if (!bytes) throw SpecError{field_path(field, "sizeLimit"), "not a quantity: '" + *limit + "'"};
            info.size_limit = static_cast<std::uint64_t>(*bytes);
        }
        info.description = std::string(info.memory ? "emptyDir (Memory)" : "emptyDir");
        return info;
    }
    for (const auto& [kind, value] : volume) {
        if (kind != "name") {
            info.description = std::string(kind);
            break;
        }
    }
    return info;
}

// Guaranteed QoS: every container has CPU and memory limits, and its
// requests (defaulted to the limits when absent) equal them.
std::vector<std::string> qos_breakers(const std::vector<ContainerResources>& containers) {
    std::vector<std::string> breakers;
    for (const auto& c : containers) {
        std::string problems;
        auto add = [&](std::string_view problem) { problems += (problems.empty() ? "" : ", ") + std::string(problem); };
        if (!c.cpu_limit_milli)
            add("no CPU limit");
        else if (c.cpu_request_milli && *c.cpu_request_milli != *c.cpu_limit_milli)
            add("CPU request != limit");
        if (!c.memory_limit_bytes)
            add("no memory limit");
        else if (c.memory_request_bytes && *c.memory_request_bytes != *c.memory_limit_bytes) {
            add("memory request != limit");
        }
        if (!problems.empty()) breakers.push_back(c.name + ": " + problems);
    }
    return breakers;
}

}  // namespace

PodResources pod_resources(const PodTemplate& pod) {
    PodResources pod_out;
    std::vector<ContainerResources>& out = pod_out.containers;
    for (std::string_view list_key : {"initContainers", "containers"}) {
        const json::array* list = array_field(*pod.spec, list_key, pod.field);
        if (list == nullptr) continue;
        std::string list_field = field_path(pod.field, list_key);
        for (std::size_t i = 0; i < list->size(); ++i) {
            std::string field = field_path(list_field, i);
            const json::object& container = object_element((*list)[i], field);
            ContainerResources resources;
            resources.name = field + " (" + string_field(container, "name", field).value_or("?") + ")";
            if (const json::object* r = object_field(container, "resources", field)) {
                std::string rf = field_path(field, "resources");
                auto read = [&](std::string_view group, std::string_view key, bool cpu) -> std::optional<std::int64_t> {
                    const json::object* values = object_field(*r, group, rf);
                    if (values == nullptr) return std::nullopt;
                    std::string vf = field_path(rf, group);
                    auto text = scalar_text(*values, key, vf);
                    if (!text) return std::nullopt;
                    auto parsed = cpu ? parse_millicores(*text) : parse_quantity_bytes(*text);
                    if (!parsed) throw SpecError{field_path(vf, key), "not a quantity: '" + *text + "'"};
                    return parsed;
                };
                resources.cpu_request_milli = read("requests", "cpu", true);
                resources.cpu_limit_milli = read("limits", "cpu", true);
                resources.memory_request_bytes = read("requests", "memory", false);
                resources.memory_limit_bytes = read("limits", "memory", false);
            }
            out.push_back(std::move(resources));
        }
    }
    pod_out.qos_breakers = qos_breakers(out);
    return pod_out;
}

namespace {

// What a pod's containers share: its volumes by name, hostIPC, its security
// context, and its memory limit (read once, not once per container that
// mounts a Memory emptyDir at /dev/shm).
struct PodShared {
    const PodTemplate& pod;
    std::map<std::string, VolumeInfo, std::less<>> volumes;
    bool host_ipc = false;
    const json::object* security = nullptr;
    std::optional<std::optional<std::uint64_t>> memory_limit;
};

PodShared read_pod_shared(const PodTemplate& pod, const ConfigMapData& config_maps) {
    PodShared shared{pod, {}, false, nullptr, std::nullopt};
    for_each_object(*pod.spec, "volumes", pod.field, [&](const json::object& volume, const std::string& item_field) {
        auto name = string_field(volume, "name", item_field);
        if (!name) throw SpecError{field_path(item_field, "name"), "missing"};
        shared.volumes[*name] = read_volume(volume, item_field, config_maps);
    });
    shared.host_ipc = bool_field(*pod.spec, "hostIPC", pod.field).value_or(false);
    shared.security = object_field(*pod.spec, "securityContext", pod.field);
    return shared;
}

// The environment facet: command and args (a gate-wrapped one as the
// command it runs after the gate), the shell in them, env and envFrom, the
// communication backend they start.
void read_launch_environment(ContainerLaunch& launch, const json::object& container, const ConfigMapData& config_maps) {
    std::vector<std::string> command = string_list(container, "command", launch.field);
    if (auto wrapped = unwrap_gate_command(command)) command = std::move(*wrapped);
    std::vector<std::string> args = string_list(container, "args", launch.field);
    launch.shell = read_shell_launch(command, args);
    launch.env = read_environment(container, launch.field, launch.shell, config_maps);
    command.insert(command.end(), args.begin(), args.end());
    launch.comm_backend = comm_backend_from_command(command, launch.env.values, launch.field + " command and args");
}

// /dev/shm's size when `info` (the volume `volume_name`) is mounted there.
Fact<std::uint64_t> shm_from_volume(const VolumeInfo& info, const std::string& where, PodShared& shared) {
    if (info.source == PodMount::Source::empty_dir && info.memory && info.size_limit) {
        return Fact<std::uint64_t>::known(*info.size_limit, where + " sizeLimit");
    }
    if (info.source == PodMount::Source::empty_dir && info.memory) {
        // Without a sizeLimit the kubelet sizes the tmpfs to the pod's
        // memory limit, else to the node's memory.
        if (!shared.memory_limit) shared.memory_limit = pod_memory_limit(*shared.pod.spec, shared.pod.field);
        if (const auto& limit = *shared.memory_limit) {
            return Fact<std::uint64_t>::known(*limit, where + " without sizeLimit: the pod's memory limit");
        }
        return Fact<std::uint64_t>::unknown(where +
                                            " has no sizeLimit and the pod no memory limit: the tmpfs takes the "
                                            "node's memory size, which the spec does not give");
    }
    if (info.source == PodMount::Source::host_path) {
        return Fact<std::uint64_t>::unknown(where + ": the node's /dev/shm, whose size the spec does not give");
    }
    return Fact<std::uint64_t>::unknown(where + ": a volume whose size the spec does not give");
}

PodMount pod_mount(const VolumeInfo& info, const std::string& volume_name, const std::string& mount_path,
                   const std::string& sub_path) {
    PodMount pm;
    pm.mount_path = mount_path;
    pm.volume = volume_name;
    pm.source = info.source;
    pm.description = info.description + (sub_path.empty() ? "" : ", subPath " + sub_path);
    pm.host_type = info.host_type;
    pm.host_path = sub_path.empty() ? info.host_path : info.host_path + "/" + sub_path;
    if (info.contents) {
        if (sub_path.empty()) {
            pm.contents = info.contents;
        } else if (auto file = info.contents->find(sub_path); file != info.contents->end()) {
            pm.contents = std::map<std::string, std::string>{{"", file->second}};
        } else {
            pm.contents.emplace();  // the kubelet makes a missing subPath an empty directory
        }
    }
    if (!sub_path.empty()) {
        pm.whole_key = pm.source == PodMount::Source::config_map || pm.source == PodMount::Source::secret;
        if (pm.source == PodMount::Source::host_path) pm.host_type.clear();
    } else {
        pm.projected = info.items;
    }
    return pm;
}

// The mounts facet: the container's filesystem view, the host paths it
// asks for, /dev/shm's size and the RDMA devices a hostPath gives it.
void read_launch_mounts(ContainerLaunch& launch, const json::object& container, PodShared& shared,
                        std::vector<std::string>& rdma) {
    ContainerFacts& facts = launch.facts;
    std::vector<PodMount> mounts;
    std::optional<Fact<std::uint64_t>> shm;
    for_each_object(
        container, "volumeMounts", launch.field, [&](const json::object& mount, const std::string& mount_field) {
            auto volume_name = string_field(mount, "name", mount_field);
            auto mount_path = string_field(mount, "mountPath", mount_field);
            if (!volume_name) throw SpecError{field_path(mount_field, "name"), "missing"};
            if (!mount_path || mount_path->empty()) throw SpecError{field_path(mount_field, "mountPath"), "missing"};
            auto volume = shared.volumes.find(*volume_name);
            if (volume == shared.volumes.end()) {
                throw SpecError{field_path(mount_field, "name"),
                                "no volume named '" + *volume_name + "' in " + field_path(shared.pod.field, "volumes")};
            }
            const VolumeInfo& info = volume->second;
            PodMount pm =
                pod_mount(info, *volume_name, *mount_path, string_field(mount, "subPath", mount_field).value_or(""));
            if (pm.source == PodMount::Source::host_path) {
                facts.requested_mounts.push_back(pm.host_path + ":" + *mount_path);
                if (normalize_absolute(pm.host_path) == "/dev/infiniband") rdma.push_back("hostPath /dev/infiniband");
            }
            if (normalize_absolute(*mount_path) == "/dev/shm") {
                shm = shm_from_volume(info, mount_field + " (volume " + *volume_name + ", " + info.description + ")",
                                      shared);
            }
            mounts.push_back(std::move(pm));
        });
    if (!shm) {
        if (shared.host_ipc) {
            shm = Fact<std::uint64_t>::unknown(shared.pod.field +
                                               ".hostIPC: the node's /dev/shm, whose size the spec does not give");
        } else {
            shm = Fact<std::uint64_t>::known(kRuntimeDefaultShm,
                                             "no volume at /dev/shm and no hostIPC: the container "
                                             "runtime's 64 MiB default");
        }
    }
    facts.shm_bytes = *shm;
    launch.files = std::make_shared<PodFileView>(std::move(mounts), "the volumes " + launch.field + " mounts");
}

// The security facet: capabilities the spec adds (privileged grants all of
// them) and whether the container runs as root.
void read_launch_security(ContainerLaunch& launch, const json::object& container, const PodShared& shared) {
    ContainerFacts& facts = launch.facts;
    const json::object* security = object_field(container, "securityContext", launch.field);
    std::string security_field = field_path(launch.field, "securityContext");
    std::vector<std::string> capabilities;
    if (security != nullptr) {
        if (bool_field(*security, "privileged", security_field).value_or(false)) {
            capabilities.emplace_back("CAP_IPC_LOCK");
            capabilities.emplace_back("ALL (privileged)");
        }
        if (const json::object* caps = object_field(*security, "capabilities", security_field)) {
            for (auto& cap : string_list(*caps, "add", field_path(security_field, "capabilities"))) {
                capabilities.push_back(cap.starts_with("CAP_") ? cap : "CAP_" + cap);
            }
        }
    }
    facts.capabilities = Fact<std::vector<std::string>>::known(
        capabilities, security_field + " (beyond the container runtime's default set)");
    auto user_of = [&](const json::object* context, const std::string& where) -> std::optional<bool> {
        if (context == nullptr) return std::nullopt;
        if (auto uid = int_field(*context, "runAsUser", where)) return *uid == 0;
        if (bool_field(*context, "runAsNonRoot", where).value_or(false)) return false;
        return std::nullopt;
    };
    const std::string pod_security_field = field_path(shared.pod.field, "securityContext");
    if (auto root = user_of(security, security_field)) {
        facts.runs_as_root = Fact<bool>::known(*root, security_field);
    } else if (auto pod_root = user_of(shared.security, pod_security_field)) {
        facts.runs_as_root = Fact<bool>::known(*pod_root, pod_security_field);
    } else {
        facts.runs_as_root = Fact<bool>::unknown("no runAsUser or runAsNonRoot: the image's USER decides");
    }
}

// One container (`list` "containers", or "initContainers" for a native
// sidecar) read as a launch, facet by facet: resources, environment,
// mounts, security.
ContainerLaunch read_launch(const json::object& container, std::string_view list, std::size_t index,
                            std::size_t resources_index, PodShared& shared, const ConfigMapData& config_maps) {
    ContainerLaunch launch;
    launch.pod = &shared.pod;
    launch.resources_index = resources_index;
    launch.field = field_path(field_path(shared.pod.field, list), index);
    launch.pointer = shared.pod.pointer + "/" + std::string(list) + "/" + std::to_string(index);
    launch.name = string_field(container, "name", launch.field).value_or("");
    launch.image = string_field(container, "image", launch.field).value_or("");
    ContainerFacts& facts = launch.facts;
    if (!launch.image.empty())
        facts.image = Fact<std::string>::known(launch.image, launch.field + ".image");
    else
        facts.image = Fact<std::string>::unknown(launch.field + ".image is not set");

    const json::object* devices = device_resources(container, launch.field);
    launch.gpus = gpu_count(devices, launch.field + ".resources.limits");
    std::vector<std::string> rdma;
    if (devices != nullptr) {
        for (const auto& [resource, count] : *devices) {
            if (is_rdma_resource(resource)) rdma.push_back(std::string(resource));
        }
    }
    read_launch_environment(launch, container, config_maps);
    read_launch_mounts(launch, container, shared, rdma);
    facts.rdma_devices = Fact<std::vector<std::string>>::known(rdma, launch.field + ".resources and volumeMounts");
    facts.memlock = Fact<std::optional<std::uint64_t>>::unknown(
        "RLIMIT_MEMLOCK is set by the node's container runtime; a pod spec cannot set it");
    read_launch_security(launch, container, shared);
    return launch;
}

}  // namespace

std::vector<ContainerLaunch> read_containers(const PodTemplate& pod, const ConfigMapData& config_maps) {
    PodShared shared = read_pod_shared(pod, config_maps);
    const json::array* list = array_field(*pod.spec, "containers", pod.field);
    if (list == nullptr || list->empty()) {
        throw SpecError{field_path(pod.field, "containers"), "missing: a pod needs at least one container"};
    }
    const json::array* init_list = array_field(*pod.spec, "initContainers", pod.field);
    const std::size_t init_containers = init_list == nullptr ? 0 : init_list->size();

    std::vector<ContainerLaunch> out;
    out.reserve(list->size());
    // A native sidecar (an init container with restartPolicy Always) runs
    // beside the containers for the pod's life: a launch like theirs.
    for (std::size_t i = 0; i < init_containers; ++i) {
        const std::string field = field_path(field_path(pod.field, "initContainers"), i);
        const json::object& container = object_element((*init_list)[i], field);
        if (string_field(container, "restartPolicy", field).value_or("") != "Always") continue;
        out.push_back(read_launch(container, "initContainers", i, i, shared, config_maps));
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
        const json::object& container = object_element((*list)[i], field_path(field_path(pod.field, "containers"), i));
        out.push_back(read_launch(container, "containers", i, init_containers + i, shared, config_maps));
    }
    return out;
}

ContainerEnv rank_environment(const ContainerLaunch& launcher) {
    ContainerEnv ranks;
    for (const auto& set : launcher.shell.rank_exports) {
        ranks.sources[set.name] = EnvSource::launcher;
        std::string where = launcher.field + " command and args, " + set.origin;
        if (set.forwarded) {
            if (auto it = launcher.env.values.find(set.name); it != launcher.env.values.end()) {
                ranks.values[set.name] = it->second;
            } else if (auto unknown = launcher.env.unknown.find(set.name); unknown != launcher.env.unknown.end()) {
                ranks.unknown[set.name] = where + " passes the launcher's value: " + unknown->second;
            } else if (!launcher.env.unread.empty()) {
                ranks.unknown[set.name] = where + " passes the launcher's value, which " + launcher.env.unread.front();
            } else {
                ranks.sources.erase(set.name);  // unset on the launcher: mpirun passes nothing
            }
        } else if (set.value) {
            ranks.values[set.name] = *set.value;
        } else if (auto expanded = set.pattern ? expand_variables(*set.pattern, launcher.env.values) : std::nullopt) {
            // The launcher's shell expands -x NAME=${X} from its own environment.
            ranks.values[set.name] = *expanded;
        } else {
            ranks.unknown[set.name] = where + ": the value " +
                                      (set.pattern ? "names a variable the launcher's spec does not set"
                                                   : "is computed when the container runs");
        }
    }
    return ranks;
}

ContainerEnv overlay_environment(ContainerEnv base, const ContainerEnv& overlay) {
    for (const auto& [name, source] : overlay.sources) {
        base.sources[name] = source;
        base.values.erase(name);
        base.unknown.erase(name);
    }
    for (const auto& [name, value] : overlay.values) base.values[name] = value;
    for (const auto& [name, why] : overlay.unknown) base.unknown[name] = why;
    base.unread.insert(base.unread.end(), overlay.unread.begin(), overlay.unread.end());
    base.env_from = base.env_from || overlay.env_from;
    return base;
}

}  // namespace launchguard::kubernetes
