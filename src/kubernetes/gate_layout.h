// Where the launch gate lives in a pod, and what in a pod gets around it.
// The gate is only as good as its folder: a container that can write the
// gate's volume, or mount something over the gate's folder, replaces the
// gate before the workload starts. So the names the gate takes (its volume,
// its install container, its folder) are chosen free of every name and
// mount the pod has, and a pod that already has the gate is recognised by
// the whole injected shape, never by one name a user can also write.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace launchguard::kubernetes {

inline constexpr std::string_view kGateVolume = "launchguard-gate";
inline constexpr std::string_view kGateInitContainer = "launchguard-gate-install";
inline constexpr std::string_view kGateDirectory = "/launchguard";
inline constexpr std::string_view kGateExecutable = "launchguard-gate";
inline constexpr std::string_view kGateImageBinary = "/usr/bin/launchguard-gate";
// The rule id of a finding that something gets around the gate.
inline constexpr std::string_view kGateBypassRule = "k8s.gate-bypass";

// The gate's names in one pod: the defaults above, or the same with "-N"
// appended where the pod uses a default itself.
struct GateLayout {
    std::string volume = std::string(kGateVolume);
    std::string install_container = std::string(kGateInitContainer);
    std::string directory = std::string(kGateDirectory);

    [[nodiscard]] std::string binary() const { return directory + "/" + std::string(kGateExecutable); }
    [[nodiscard]] std::string profile_file() const { return directory + "/profile.yaml"; }
};

// The first layout none of whose names the pod spec uses: no volume or
// volume mount by the volume's name, no container (init, sidecar,
// ephemeral) by the install container's name, and no mount or device path
// at, under or above the folder.
GateLayout free_gate_layout(const boost::json::object& spec);

// The gate already in the pod: an init container running the gate's install
// command (`/usr/bin/launchguard-gate install --into DIR ...`, with `image`
// where it is not empty), mounting an emptyDir volume of the pod at DIR.
struct InstalledGate {
    GateLayout layout;
    std::size_t install_index = 0;  // in initContainers
    std::vector<std::string> install_command;
};
std::optional<InstalledGate> find_installed_gate(const boost::json::object& spec, std::string_view image);

// The strings of a JSON array (any other item as ""); empty for anything
// but an array. Admission has not validated the spec yet: never throws.
std::vector<std::string> string_items(const boost::json::value* value);

// Whether `command` runs the gate of `layout` (`DIR/launchguard-gate run ...`).
bool runs_gate(const std::vector<std::string>& command, const GateLayout& layout);
// Whether the container's command or postStart hook runs the gate of `layout`.
bool gated_by(const boost::json::object& container, const GateLayout& layout);

// What in the pod spec gets around the gate, one line per mount naming the
// container's field: a container other than the install container that
// mounts the gate's volume writable, or is not gated and mounts it at all,
// or mounts it elsewhere than the gate's folder; a gated container's other
// mount at or under the gate's folder; a mount of a volume named
// launchguard-gate that the pod does not define (the gate's volume, once the
// gate is added under that name). `image` as for find_installed_gate.
std::vector<std::string> gate_bypasses(const boost::json::object& spec, const std::string& pod_field,
                                       std::string_view image);

}  // namespace launchguard::kubernetes
