// `scontrol show node --oneliner` as node-check --slurm reads it: the drain
// reason in it is free text an administrator typed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "node/slurm_node.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto state = launchguard::parse_scontrol_node(text);
    if (state) {
        launchguard::NodeVerdict verdict;
        verdict.health = launchguard::NodeHealth::healthy;
        auto plan = launchguard::plan_slurm_node(*state, verdict, launchguard::OnUnknown::keep);
        // Only launchguard's own drains may ever be resumed.
        if (plan.action == launchguard::SlurmNodeAction::resume && !state->drained_by_launchguard()) __builtin_trap();
        if (plan.action == launchguard::SlurmNodeAction::drain) __builtin_trap();
    }
    return 0;
}
