#include "kubernetes/gate_layout.h"

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <functional>
#include <set>

#include "kubernetes/spec_fields.h"
#include "util/path.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

constexpr std::string_view kContainerLists[] = {"initContainers", "containers", "ephemeralContainers"};

std::string string_of(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value != nullptr && value->is_string() ? std::string(value->get_string()) : std::string();
}
// Every container object of the spec with its field ("spec.initContainers[0] (name)").
void for_each_container(const json::object& spec, const std::string& pod_field,
                        const std::function<void(const json::object&, std::string_view list, std::size_t index,
                                                 const std::string& field)>& visit) {
    for (std::string_view list_key : kContainerLists) {
        const json::array* list = array_of(spec.if_contains(list_key));
        if (list == nullptr) continue;
        for (std::size_t i = 0; i < list->size(); ++i) {
            const json::object* container = object_of(&(*list)[i]);
            if (container == nullptr) continue;
            visit(*container, list_key, i,
                  pod_field + "." + std::string(list_key) + "[" + std::to_string(i) + "] (" +
                      string_of(*container, "name") + ")");
        }
    }
}

// The container's volume mounts and device paths: (volume, path, the mount object).
void for_each_mount(const json::object& container,
                    const std::function<void(const std::string& volume, const std::string& path,
                                             const json::object& mount, std::string_view key)>& visit) {
    for (std::string_view key : {"volumeMounts", "volumeDevices"}) {
        const json::array* mounts = array_of(container.if_contains(key));
        if (mounts == nullptr) continue;
        for (const auto& item : *mounts) {
            const json::object* mount = object_of(&item);
            if (mount == nullptr) continue;
            std::string path = string_of(*mount, key == "volumeMounts" ? "mountPath" : "devicePath");
            visit(string_of(*mount, "name"), path.empty() ? path : normalize_absolute(path), *mount, key);
        }
    }
}

bool at_or_under(const std::string& path, const std::string& directory) {
    return path == directory || path.starts_with(directory + "/");
}

bool volume_defined(const json::object& spec, std::string_view name) {
    const json::array* volumes = array_of(spec.if_contains("volumes"));
    if (volumes == nullptr) return false;
    for (const auto& item : *volumes) {
        const json::object* volume = object_of(&item);
        if (volume != nullptr && string_of(*volume, "name") == name) return true;
    }
    return false;
}

bool empty_dir_volume(const json::object& spec, std::string_view name) {
    const json::array* volumes = array_of(spec.if_contains("volumes"));
    if (volumes == nullptr) return false;
    for (const auto& item : *volumes) {
        const json::object* volume = object_of(&item);
        if (volume != nullptr && string_of(*volume, "name") == name)
            return volume->size() == 2 && object_of(volume->if_contains("emptyDir")) != nullptr;
    }
    return false;
}

}  // namespace

std::vector<std::string> string_items(const json::value* value) {
    std::vector<std::string> out;
    const json::array* list = array_of(value);
    if (list == nullptr) return out;
    for (const auto& item : *list) out.push_back(item.is_string() ? std::string(item.get_string()) : std::string());
    return out;
}

GateLayout free_gate_layout(const json::object& spec) {
    std::set<std::string, std::less<>> volumes;
    std::set<std::string, std::less<>> containers;
    std::vector<std::string> paths;
    if (const json::array* list = array_of(spec.if_contains("volumes"))) {
        for (const auto& item : *list) {
            if (const json::object* volume = object_of(&item)) volumes.insert(string_of(*volume, "name"));
        }
    }
    for_each_container(spec, "", [&](const json::object& container, std::string_view, std::size_t, const std::string&) {
        containers.insert(string_of(container, "name"));
        for_each_mount(container,
                       [&](const std::string& volume, const std::string& path, const json::object&, std::string_view) {
                           volumes.insert(volume);
                           if (!path.empty()) paths.push_back(path);
                       });
    });
    for (unsigned n = 1;; ++n) {
        const std::string suffix = n == 1 ? "" : "-" + std::to_string(n);
        GateLayout layout;
        layout.volume += suffix;
        layout.install_container += suffix;
        layout.directory += suffix;
        const bool clash =
            volumes.count(layout.volume) != 0 || containers.count(layout.install_container) != 0 ||
            std::any_of(paths.begin(), paths.end(), [&](const std::string& path) {
                return at_or_under(path, layout.directory) || at_or_under(layout.directory, path) || path == "/";
            });
        if (!clash) return layout;
    }
}

std::optional<InstalledGate> find_installed_gate(const json::object& spec, std::string_view image) {
    const json::array* inits = array_of(spec.if_contains("initContainers"));
    if (inits == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < inits->size(); ++i) {
        const json::object* container = object_of(&(*inits)[i]);
        if (container == nullptr) continue;
        if (!image.empty() && string_of(*container, "image") != image) continue;
        std::vector<std::string> command = string_items(container->if_contains("command"));
        if (command.size() < 4 || command[0] != kGateImageBinary || command[1] != "install" || command[2] != "--into" ||
            command[3].empty() || command[3] != normalize_absolute(command[3]))
            continue;
        if (container->if_contains("args") != nullptr) continue;
        std::optional<std::string> volume;
        for_each_mount(*container, [&](const std::string& name, const std::string& path, const json::object& mount,
                                       std::string_view key) {
            if (key == "volumeMounts" && path == command[3] && mount.if_contains("subPath") == nullptr &&
                mount.if_contains("subPathExpr") == nullptr)
                volume = name;
        });
        if (!volume || !empty_dir_volume(spec, *volume)) continue;
        InstalledGate gate;
        gate.layout.volume = *volume;
        gate.layout.install_container = string_of(*container, "name");
        gate.layout.directory = command[3];
        gate.install_index = i;
        gate.install_command = std::move(command);
        return gate;
    }
    return std::nullopt;
}

bool runs_gate(const std::vector<std::string>& command, const GateLayout& layout) {
    return command.size() >= 2 && command[0] == layout.binary() && command[1] == "run";
}

bool gated_by(const json::object& container, const GateLayout& layout) {
    if (runs_gate(string_items(container.if_contains("command")), layout)) return true;
    const json::object* lifecycle = object_of(container.if_contains("lifecycle"));
    const json::object* post_start = lifecycle ? object_of(lifecycle->if_contains("postStart")) : nullptr;
    const json::object* exec = post_start ? object_of(post_start->if_contains("exec")) : nullptr;
    return exec != nullptr && runs_gate(string_items(exec->if_contains("command")), layout);
}

std::vector<std::string> gate_bypasses(const json::object& spec, const std::string& pod_field, std::string_view image) {
    std::vector<std::string> out;
    const std::optional<InstalledGate> gate = find_installed_gate(spec, image);
    const bool gate_volume_undefined = !volume_defined(spec, kGateVolume);
    for_each_container(
        spec, pod_field,
        [&](const json::object& container, std::string_view list, std::size_t index, const std::string& field) {
            const bool install = gate && list == "initContainers" && index == gate->install_index;
            const bool gated = gate && !install && gated_by(container, gate->layout);
            for_each_mount(container, [&](const std::string& volume, const std::string& path, const json::object& mount,
                                          std::string_view key) {
                if (gate_volume_undefined && volume == kGateVolume) {
                    out.push_back(field + " mounts a volume named " + std::string(kGateVolume) +
                                  " that the pod does not define, which would be the launch gate's: " + field + "." +
                                  std::string(key));
                    return;
                }
                if (!gate || install) return;
                const GateLayout& layout = gate->layout;
                if (volume == layout.volume) {
                    const json::value* read_only = mount.if_contains("readOnly");
                    const bool as_gated = gated && key == "volumeMounts" && path == layout.directory &&
                                          read_only != nullptr && read_only->is_bool() && read_only->get_bool() &&
                                          mount.if_contains("subPath") == nullptr &&
                                          mount.if_contains("subPathExpr") == nullptr;
                    if (!as_gated) {
                        out.push_back(field + " mounts the launch gate's volume " + layout.volume +
                                      " (only the gate's install container may write it; a gated container mounts it "
                                      "read-only at " +
                                      layout.directory + "): " + field + "." + std::string(key));
                    }
                    return;
                }
                if (gated && !path.empty() && at_or_under(path, layout.directory)) {
                    out.push_back(field + " mounts volume " + volume + " at " + path +
                                  ", over the launch gate's folder " + layout.directory + ": " + field + "." +
                                  std::string(key));
                }
            });
        });
    return out;
}

}  // namespace launchguard::kubernetes
