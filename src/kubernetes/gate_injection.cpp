#include "kubernetes/gate_injection.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <algorithm>

#include "kubernetes/spec_fields.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

constexpr std::string_view kEmbeddedOrigin = "embedded:";

json::array strings(const std::vector<std::string>& items) {
    json::array out;
    for (const auto& item : items) out.emplace_back(item);
    return out;
}

// The init container of the contract: copies the gate and the profile into
// the volume. Its securityContext passes the `restricted` Pod Security
// Standard. Requests equal limits, so that the init container never takes
// the pod out of the Guaranteed QoS class (the CPU Manager's static policy
// pins CPUs only for Guaranteed pods, cpu.k8s-not-pinnable); init containers'
// requests are the maximum with the app containers' sum, never added to it.
std::vector<std::string> install_command(const GateLayout& layout, const Profile& profile) {
    std::vector<std::string> command = {std::string(kGateImageBinary), "install", "--into", layout.directory};
    for (auto& argument : gate_profile_arguments(profile)) command.push_back(std::move(argument));
    return command;
}

json::value install_container(const GateOptions& gate, const Profile& profile, const GateLayout& layout) {
    json::object quantities{{"cpu", "100m"}, {"memory", "32Mi"}};
    return json::object{
        {"name", layout.install_container},
        {"image", gate.image},
        {"command", strings(install_command(layout, profile))},
        {"volumeMounts", json::array{json::object{{"name", layout.volume}, {"mountPath", layout.directory}}}},
        {"resources", json::object{{"requests", quantities}, {"limits", quantities}}},
        {"securityContext", json::object{{"runAsNonRoot", true},
                                         {"runAsUser", 65532},
                                         {"allowPrivilegeEscalation", false},
                                         {"capabilities", json::object{{"drop", json::array{"ALL"}}}},
                                         {"readOnlyRootFilesystem", true},
                                         {"seccompProfile", json::object{{"type", "RuntimeDefault"}}}}},
    };
}

std::string string_member(const json::object& object, std::string_view key, std::string fallback) {
    const json::value* value = object.if_contains(key);
    return value != nullptr && value->is_string() && !value->get_string().empty() ? std::string(value->get_string())
                                                                                  : fallback;
}

std::vector<std::string> run_line(Mode mode, const GateOptions& gate, const GateLayout& layout,
                                  const std::string& termination_log) {
    return {layout.binary(),
            "run",
            "--profile",
            layout.profile_file(),
            "--mode",
            std::string(to_string(mode)),
            "--on-error",
            std::string(to_string(gate.on_error)),
            "--termination-log",
            termination_log};
}

std::vector<std::string> run_line_for(const json::object& container, Mode mode, const GateOptions& gate,
                                      const GateLayout& layout) {
    return run_line(mode, gate, layout,
                    string_member(container, "terminationMessagePath", std::string(kDefaultTerminationLog)));
}

std::vector<std::string> post_start_command(const json::object& container) {
    const json::object* lifecycle = object_of(container.if_contains("lifecycle"));
    const json::object* post_start = lifecycle ? object_of(lifecycle->if_contains("postStart")) : nullptr;
    const json::object* exec = post_start ? object_of(post_start->if_contains("exec")) : nullptr;
    return exec ? string_items(exec->if_contains("command")) : std::vector<std::string>{};
}

bool has_post_start(const json::object& container) {
    const json::object* lifecycle = object_of(container.if_contains("lifecycle"));
    return lifecycle != nullptr && lifecycle->if_contains("postStart") != nullptr &&
           !lifecycle->at("postStart").is_null();
}

bool mounts_volume(const json::object& container, const std::string& volume) {
    const json::array* mounts = array_of(container.if_contains("volumeMounts"));
    if (mounts == nullptr) return false;
    return std::any_of(mounts->begin(), mounts->end(), [&](const json::value& item) {
        const json::object* mount = object_of(&item);
        const json::value* name = mount ? mount->if_contains("name") : nullptr;
        return name != nullptr && name->is_string() && name->get_string() == volume;
    });
}

// A postStart hook that runs some gate (a folder of an earlier injection).
bool gate_hook(const json::object& container) {
    const std::vector<std::string> hook = post_start_command(container);
    return hook.size() >= 2 && hook[1] == "run" && hook[0].ends_with("/" + std::string(kGateExecutable));
}

// Whether the container runs exactly the gate the injection would give it
// under `layout`, or is one the injection leaves alone (no command, a
// postStart hook of its own).
bool gated_as_injected(const json::object& container, Mode mode, const GateOptions& gate, const GateLayout& layout) {
    std::vector<std::string> line = run_line_for(container, mode, gate, layout);
    const std::vector<std::string> command = string_items(container.if_contains("command"));
    if (command.empty()) {
        // Its own hook: left alone, and said so when the gate was added.
        if (has_post_start(container) && !gate_hook(container)) return true;
        line.emplace_back("--check-only");
        return mounts_volume(container, layout.volume) && post_start_command(container) == line;
    }
    line.emplace_back("--");
    return mounts_volume(container, layout.volume) && command.size() > line.size() &&
           std::equal(line.begin(), line.end(), command.begin());
}

bool already_injected(const json::object& spec, const PodTemplate& pod, PodPatchBuilder& builder,
                      const std::vector<const ContainerLaunch*>& containers, const GateOptions& gate,
                      const Profile& profile, Mode mode) {
    const std::optional<InstalledGate> installed = find_installed_gate(spec, gate.image);
    if (!installed || installed->install_command != install_command(installed->layout, profile)) return false;
    if (!gate_bypasses(spec, pod.field, gate.image).empty()) return false;
    return std::all_of(containers.begin(), containers.end(), [&](const ContainerLaunch* container) {
        const json::object* current = object_of(builder.at(container->pointer));
        return current != nullptr && gated_as_injected(*current, mode, gate, installed->layout);
    });
}

}  // namespace

std::string_view to_string(GateOnError policy) { return policy == GateOnError::block ? "block" : "allow"; }

std::optional<GateOnError> parse_gate_on_error(std::string_view text) {
    if (text == "allow") return GateOnError::allow;
    if (text == "block") return GateOnError::block;
    return std::nullopt;
}

std::vector<std::string> gate_profile_arguments(const Profile& profile) {
    if (profile.origin.starts_with(kEmbeddedOrigin) && profile.origin.substr(kEmbeddedOrigin.size()) == profile.name) {
        return {"--profile", profile.name};
    }
    return {"--profile-yaml", profile_to_json(profile)};
}

std::optional<std::vector<std::string>> unwrap_gate_command(const std::vector<std::string>& command) {
    if (command.size() < 2 || !command[0].ends_with("/" + std::string(kGateExecutable)) || command[1] != "run")
        return std::nullopt;
    for (std::size_t i = 2; i < command.size(); ++i) {
        if (command[i] == "--")
            return std::vector<std::string>(command.begin() + static_cast<std::ptrdiff_t>(i) + 1, command.end());
    }
    return std::nullopt;
}

std::vector<std::string> inject_gate(PodPatchBuilder& builder, const PodTemplate& pod,
                                     const std::vector<const ContainerLaunch*>& containers, const GateOptions& gate,
                                     const Profile& profile, Mode mode) {
    std::vector<std::string> notes;
    if (mode == Mode::off || containers.empty()) return notes;
    const json::object* spec = object_of(builder.at(pod.pointer));
    if (spec == nullptr) return notes;
    if (already_injected(*spec, pod, builder, containers, gate, profile, mode)) return notes;

    // Names of its own, so that nothing of the pod's is the gate's volume,
    // install container or folder (the pod's own may mean to be them).
    const GateLayout layout = free_gate_layout(*spec);
    for (auto& bypass : gate_bypasses(*spec, pod.field, gate.image)) notes.push_back(std::move(bypass));
    if (layout.volume != kGateVolume) {
        notes.push_back("added as volume " + layout.volume + ", init container " + layout.install_container +
                        " and folder " + layout.directory +
                        ", since the pod uses the default names itself: " + pod.field);
    }

    builder.append(pod.pointer, "volumes",
                   json::object{{"name", layout.volume}, {"emptyDir", json::object{{"sizeLimit", "32Mi"}}}});
    for (const ContainerLaunch* container : containers) {
        const json::object* before = object_of(builder.at(container->pointer));
        if (before == nullptr) continue;
        std::vector<std::string> command = string_items(before->if_contains("command"));
        // A command an earlier gate wraps gets this gate around the original.
        if (auto original = unwrap_gate_command(command)) command = std::move(*original);
        // No command: the image's ENTRYPOINT runs, which the spec does not
        // name, so the gate cannot run it; it judges beside it instead,
        // unless a hook of the container's own is there (then it gets no
        // mount either: nothing but a gated container mounts the volume).
        if (command.empty() && has_post_start(*before) && !gate_hook(*before)) {
            notes.push_back(
                "not added to a container with no command (the image's ENTRYPOINT runs) and a postStart hook of "
                "its own, so only its spec was judged: " +
                container->field);
            continue;
        }
        builder.append(container->pointer, "volumeMounts",
                       json::object{{"name", layout.volume}, {"mountPath", layout.directory}, {"readOnly", true}});
        std::vector<std::string> line = run_line_for(*object_of(builder.at(container->pointer)), mode, gate, layout);
        if (!command.empty()) {
            line.emplace_back("--");
            line.insert(line.end(), command.begin(), command.end());
            builder.replace(container->pointer + "/command", strings(line));
            continue;
        }
        line.emplace_back("--check-only");
        std::string at = builder.ensure_object(container->pointer, "lifecycle");
        builder.add(at + "/postStart", json::object{{"exec", json::object{{"command", strings(line)}}}});
    }
    // Last: the containers' pointers (a native sidecar's is an index into
    // initContainers) name the spec as it was before the install container.
    builder.prepend(pod.pointer, "initContainers", install_container(gate, profile, layout));
    return notes;
}

}  // namespace launchguard::kubernetes
