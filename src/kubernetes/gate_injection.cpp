#include "kubernetes/gate_injection.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

constexpr std::string_view kEmbeddedOrigin = "embedded:";

const json::object* object_of(const json::value* value) {
    return value != nullptr && value->is_object() ? &value->get_object() : nullptr;
}
const json::array* array_of(const json::value* value) {
    return value != nullptr && value->is_array() ? &value->get_array() : nullptr;
}

bool has_named(const json::array* list, std::string_view name, std::string_view key = "name") {
    if (list == nullptr) return false;
    for (const auto& item : *list) {
        const json::object* object = object_of(&item);
        if (object == nullptr) continue;
        const json::value* value = object->if_contains(key);
        if (value != nullptr && value->is_string() && value->get_string() == name) return true;
    }
    return false;
}

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
json::value install_container(const GateOptions& gate, const Profile& profile) {
    std::vector<std::string> command = {std::string(kGateImageBinary), "install", "--into",
                                        std::string(kGateDirectory)};
    for (auto& argument : gate_profile_arguments(profile)) command.push_back(std::move(argument));
    json::object quantities{{"cpu", "100m"}, {"memory", "32Mi"}};
    return json::object{
        {"name", kGateInitContainer},
        {"image", gate.image},
        {"command", strings(command)},
        {"volumeMounts", json::array{json::object{{"name", kGateVolume}, {"mountPath", kGateDirectory}}}},
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

std::vector<std::string> run_line(Mode mode, const GateOptions& gate, const std::string& termination_log) {
    return {std::string(kGateBinary),
            "run",
            "--profile",
            std::string(kGateProfileFile),
            "--mode",
            std::string(to_string(mode)),
            "--on-error",
            std::string(to_string(gate.on_error)),
            "--termination-log",
            termination_log};
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
    if (command.size() < 2 || command[0] != kGateBinary || command[1] != "run") return std::nullopt;
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
    if (has_named(array_of(spec->if_contains("initContainers")), kGateInitContainer)) return notes;  // injected
    if (has_named(array_of(spec->if_contains("volumes")), kGateVolume)) {
        notes.push_back(pod.field + ".volumes: a volume is already named " + std::string(kGateVolume) +
                        " without the init container " + std::string(kGateInitContainer) +
                        ": the launch gate is not added to this pod");
        return notes;
    }
    // Which containers can take it: a mount at /launchguard of their own
    // would collide with the gate's.
    std::vector<const ContainerLaunch*> judged;
    for (const ContainerLaunch* container : containers) {
        const json::object* current = object_of(builder.at(container->pointer));
        if (current == nullptr) continue;
        if (has_named(array_of(current->if_contains("volumeMounts")), kGateDirectory, "mountPath")) {
            notes.push_back(container->field + ".volumeMounts: " + std::string(kGateDirectory) +
                            " is mounted already: the launch gate is not added to this container");
            continue;
        }
        judged.push_back(container);
    }
    if (judged.empty()) return notes;

    builder.append(pod.pointer, "volumes",
                   json::object{{"name", kGateVolume}, {"emptyDir", json::object{{"sizeLimit", "32Mi"}}}});
    builder.prepend(pod.pointer, "initContainers", install_container(gate, profile));
    for (const ContainerLaunch* container : judged) {
        builder.append(container->pointer, "volumeMounts",
                       json::object{{"name", kGateVolume}, {"mountPath", kGateDirectory}, {"readOnly", true}});
        const json::object& current = *object_of(builder.at(container->pointer));
        std::vector<std::string> line =
            run_line(mode, gate, string_member(current, "terminationMessagePath", std::string(kDefaultTerminationLog)));
        const json::array* command = array_of(current.if_contains("command"));
        if (command != nullptr && !command->empty()) {
            json::array wrapped = strings(line);
            wrapped.emplace_back("--");
            for (const auto& word : *command) wrapped.push_back(word);
            builder.replace(container->pointer + "/command", std::move(wrapped));
            continue;
        }
        // No command: the image's ENTRYPOINT runs, which the spec does not
        // name, so the gate cannot run it; it judges beside it instead.
        const json::object* lifecycle = object_of(current.if_contains("lifecycle"));
        if (lifecycle != nullptr && lifecycle->if_contains("postStart") != nullptr &&
            !lifecycle->at("postStart").is_null()) {
            notes.push_back(container->field +
                            ": no command (the image's ENTRYPOINT runs) and a postStart hook of its own: the launch "
                            "gate cannot run in it; only the spec was judged");
            continue;
        }
        line.emplace_back("--check-only");
        std::string at = builder.ensure_object(container->pointer, "lifecycle");
        builder.add(at + "/postStart", json::object{{"exec", json::object{{"command", strings(line)}}}});
    }
    return notes;
}

}  // namespace launchguard::kubernetes
