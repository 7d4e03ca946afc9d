// The launch gate's injection: what the mutating webhook (and `launchguard
// review --patch/--patched` with --gate-image) adds to a pod template so that
// launchguard-gate judges each GPU container again when it starts, from
// inside, where it sees the image, the devices and the limits the spec
// cannot show (docs/kubernetes.md, "The launch gate"). Names as in
// gate_layout.h (launchguard-gate, launchguard-gate-install, /launchguard,
// or the same with "-N" where the pod uses one of them):
//
//   volumes:         the gate's volume, an emptyDir (sizeLimit 32Mi)
//   initContainers:  the install container first: copies the gate and the
//                    profile into the volume, restricted Pod Security
//   each GPU container (a native sidecar too): the volume read-only at the
//                    gate's folder, and either its command wrapped
//                    (`DIR/launchguard-gate run ... -- COMMAND`, args
//                    unchanged) or, without a command, a postStart hook
//                    `DIR/launchguard-gate run ... --check-only`
//
// A template that already has the whole shape (the install container with
// the gate's image and command on an emptyDir, every GPU container gated by
// it, nothing else on the volume or over the folder) is left alone, so a
// patched object patches nothing more; anything less gets the gate anew.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "kubernetes/gate_layout.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/pod_launch.h"
#include "profile/profile.h"

namespace launchguard::kubernetes {

inline constexpr std::string_view kDefaultTerminationLog = "/dev/termination-log";

enum class GateOnError { allow, block };
std::string_view to_string(GateOnError policy);
std::optional<GateOnError> parse_gate_on_error(std::string_view text);

struct GateOptions {
    std::string image;  // the site's gate image (webhook config gate.image)
    GateOnError on_error = GateOnError::allow;
};

// How the install container gets `profile`: an embedded profile by name
// (`--profile NAME`), any other as its settings (`--profile-yaml TEXT`, the
// compiled JSON form, which is YAML), since the gate's node cannot read the
// webhook's files.
std::vector<std::string> gate_profile_arguments(const Profile& profile);

// The command a gate-wrapped container runs after the gate: the part after
// "--" of `DIR/launchguard-gate run ... -- COMMAND` (any folder); nullopt for
// any other command. The review reads a wrapped container as its original command.
std::optional<std::vector<std::string>> unwrap_gate_command(const std::vector<std::string>& command);

// Adds the gate to the pod template `pod` for its GPU containers
// (`containers`: those of this template that request GPUs), judged under
// `profile` in `mode` (nothing for Mode::off). Returns one line per thing
// the review should say, what first and the field last (kubectl shows a
// warning's first 120 characters): a container left with only its own
// postStart hook, what in the pod would get around the gate and the names
// the gate took instead. An already injected template adds nothing and says
// nothing.
std::vector<std::string> inject_gate(PodPatchBuilder& builder, const PodTemplate& pod,
                                     const std::vector<const ContainerLaunch*>& containers, const GateOptions& gate,
                                     const Profile& profile, Mode mode);

}  // namespace launchguard::kubernetes
