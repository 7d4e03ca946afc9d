// CPU power management (field case 2): governor, idle states, turbo and NUMA
// balancing, as the node's sysfs/procfs shows them. These are node settings;
// a task can see them but not change them, so every fix is a manual step.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

using rules::join;

// The CPUs a per-CPU setting is judged on: the task's mask when known (only
// those run the job), else every CPU that reports the setting (the node view
// of the prolog, or a live task whose mask could not be read).
struct CpuScope {
    CpuSet cpus;
    std::string description;  // "0-3 (the task's CPU mask)"
};

template <typename Value>
CpuSet cpus_reporting(const std::map<unsigned, Value>& per_cpu) {
    CpuSet cpus;
    for (const auto& [cpu, value] : per_cpu) cpus.add(cpu);
    return cpus;
}

CpuScope job_scope(const LaunchContext& ctx, const CpuSet& reporting) {
    if (ctx.cpu_mask) {
        return {ctx.cpu_mask->intersect(reporting), ctx.cpu_mask->to_list() + " (the task's CPU mask)"};
    }
    return {reporting, reporting.to_list() + " (every CPU: task CPU mask unknown, " + ctx.cpu_mask.reason() + ")"};
}

CpuScope node_scope(const CpuSet& reporting) { return {reporting, reporting.to_list() + " (every CPU of the node)"}; }

// Power facts, or nullptr after saying why the rule cannot look.
const CpuPower* power_or_unknown(const RuleInput& in, RuleOutput& out, const std::string& what) {
    const auto& power = in.ctx.node.power;
    if (!power) {
        out.unknown("cannot tell " + what + " because " + power.reason());
        return nullptr;
    }
    return &power.value();
}

std::string khz_as_ghz(long khz) { return rules::format_number(static_cast<double>(khz / 10000) / 100.0) + " GHz"; }

// The governors of Linux's cpufreq (drivers/cpufreq, intel_pstate).
constexpr std::array<std::string_view, 6> kGovernors = {"performance",  "powersave", "ondemand",
                                                        "conservative", "schedutil", "userspace"};
constexpr ChoiceParameter kExpectedGovernor{"cpu.governor", "performance", kGovernors, "cpufreq governor",
                                            "the governor every CPU of the task should run"};
constexpr auto kGovernorParameters = parameter_list(kExpectedGovernor);

void check_governor(const RuleInput& in, RuleOutput& out) {
    const std::string expected(kExpectedGovernor.in(in.profile));
    const CpuPower* power = power_or_unknown(in, out, "the cpufreq governor");
    if (power == nullptr) return;
    if (power->governor.empty()) {
        out.unknown("cannot tell the cpufreq governor because no CPU exposes cpufreq/scaling_governor under " +
                    in.ctx.node.power.source() +
                    " (no cpufreq driver; common in VMs, where the hypervisor owns "
                    "frequency scaling)");
        return;
    }
    CpuScope scope = job_scope(in.ctx, cpus_reporting(power->governor));
    if (scope.cpus.empty()) {
        out.unknown("cannot tell the cpufreq governor of the task's CPUs " + in.ctx.cpu_mask->to_list() +
                    ": only CPUs " + cpus_reporting(power->governor).to_list() + " expose one");
        return;
    }
    std::map<std::string, CpuSet> wrong;  // governor -> CPUs running it
    for (unsigned cpu : scope.cpus.cpus()) {
        const std::string& governor = power->governor.at(cpu);
        if (governor != expected) wrong[governor].add(cpu);
    }
    if (wrong.empty()) return;

    std::vector<std::string> parts;
    for (const auto& [governor, cpus] : wrong) parts.push_back("'" + governor + "' on CPUs " + cpus.to_list());
    Finding& finding = out.fire("cpufreq governor is " + join(parts, ", ") + ", not '" + expected +
                                "': cores wait at low clocks and ramp up only after load appears, so short "
                                "communication and launch phases run slower");
    std::vector<std::string> seen;
    for (const auto& [governor, cpus] : wrong) seen.push_back(governor + " (CPUs " + cpus.to_list() + ")");
    finding.evidence.emplace_back("scaling_governor", join(seen, "; "));
    finding.evidence.emplace_back("expected", expected + " (profile " + in.profile.name + ")");
    finding.evidence.emplace_back("cpus_checked", scope.description);
    finding.evidence.emplace_back("source", in.ctx.node.power.source());
    finding.remediation.push_back(RemediationOp::manual_step(
        "on the node, as root: cpupower frequency-set -g " + expected +
        "; make it persistent with a tuned profile (tuned-adm profile throughput-performance), a systemd unit, or "
        "cpufreq.default_governor=" +
        expected + " on the kernel command line"));
}

// Kernel parameters that cap or switch off CPU idle states.
std::vector<std::string> idle_limiting_params(const Fact<std::string>& cmdline) {
    std::vector<std::string> found;
    if (!cmdline) return found;
    const std::string& text = *cmdline;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find(' ', pos);
        if (end == std::string::npos) end = text.size();
        std::string token = text.substr(pos, end - pos);
        pos = end + 1;
        for (const char* prefix : {"intel_idle.max_cstate=", "processor.max_cstate=", "idle=", "cpuidle.off=",
                                   "cpuidle.governor=", "intel_idle.states_off="}) {
            if (token.rfind(prefix, 0) == 0) found.push_back(token);
        }
    }
    return found;
}

// The first idle state is a polling loop (POLL, or WFI on Arm) and the second
// the shallowest halt; state 2 and up are the deep core/package states that
// give busy cores their turbo headroom.
constexpr std::size_t kFirstDeepState = 2;

constexpr IntegerParameter<int> kMinIdleStates{"cpu.min_idle_states", 3, 0, 64,
                                               "fire when a CPU exposes fewer idle states (0: never)"};
constexpr auto kCstatesParameters = parameter_list(kMinIdleStates);

void check_cstates(const RuleInput& in, RuleOutput& out) {
    const CpuPower* power = power_or_unknown(in, out, "which CPU idle states are available");
    if (power == nullptr) return;
    // Turbo headroom comes from the idle cores, so every CPU of the node counts.
    CpuSet reporting = cpus_reporting(power->governor).unite(cpus_reporting(power->idle_states));
    CpuScope scope = node_scope(reporting);
    // The count is an x86 measure: on Arm (Grace) the only idle state is
    // WFI (C1) and there is no turbo for deeper states to feed (NVIDIA Grace
    // Performance Tuning Guide, "Power and Thermals"), so it does not apply.
    const int min_states = rules::arm_node(in) ? 0 : kMinIdleStates.in(in.profile);
    const auto& virtualization = in.ctx.node.virtualization;
    if (power->idle_states.empty() && min_states > 0 && virtualization && *virtualization != "none") {
        out.unknown("cannot tell which idle states the CPUs reach: this node is a " + *virtualization +
                    " guest without cpuidle states, and C-states are the hypervisor host's setting");
        return;
    }

    std::map<std::size_t, CpuSet> too_few;        // exposed count -> CPUs
    std::map<std::string, CpuSet> deep_disabled;  // "state3 (C6)" -> CPUs
    std::string example_names;
    for (unsigned cpu : scope.cpus.cpus()) {
        auto it = power->idle_states.find(cpu);
        std::size_t count = it == power->idle_states.end() ? 0 : it->second.size();
        if (static_cast<int>(count) < min_states) {
            too_few[count].add(cpu);
            if (example_names.empty() && count > 0) {
                std::vector<std::string> names;
                for (const auto& state : it->second) names.push_back(state.name);
                example_names = join(names);
            }
        }
        if (it == power->idle_states.end()) continue;
        for (std::size_t index = kFirstDeepState; index < it->second.size(); ++index) {
            const auto& state = it->second[index];
            if (state.disabled) deep_disabled["state" + std::to_string(index) + " (" + state.name + ")"].add(cpu);
        }
    }
    std::vector<std::string> kernel_limits = idle_limiting_params(in.ctx.node.kernel_cmdline);

    if (!too_few.empty()) {
        std::vector<std::string> parts;
        for (const auto& [count, cpus] : too_few) {
            parts.push_back("CPUs " + cpus.to_list() + " expose " + std::to_string(count) + " idle state" +
                            (count == 1 ? "" : "s"));
        }
        Finding& finding = out.fire(
            join(parts) + (example_names.empty() ? std::string() : " (" + example_names + ")") +
            ", the profile expects at least " + std::to_string(min_states) +
            ": with deep C-states off in firmware or the kernel, idle cores free no power budget and busy cores "
            "stay below their turbo clocks");
        std::vector<std::string> counts;
        for (const auto& [count, cpus] : too_few)
            counts.push_back(std::to_string(count) + " (CPUs " + cpus.to_list() + ")");
        finding.evidence.emplace_back("idle_states", join(counts, "; "));
        if (!example_names.empty()) finding.evidence.emplace_back("state_names", example_names);
        finding.evidence.emplace_back("min_idle_states",
                                      std::to_string(min_states) + " (profile " + in.profile.name + ")");
        finding.evidence.emplace_back("cpus_checked", scope.description);
        if (!kernel_limits.empty()) finding.evidence.emplace_back("kernel_cmdline_limits", join(kernel_limits, " "));
        finding.evidence.emplace_back("source", in.ctx.node.power.source());
        finding.remediation.push_back(RemediationOp::manual_step(
            "enable the deep core and package C-states (C6 and deeper) in the BIOS/firmware power settings"));
        if (!kernel_limits.empty()) {
            finding.remediation.push_back(RemediationOp::manual_step("remove " + join(kernel_limits, " ") +
                                                                     " from the kernel command line and reboot"));
        }
    }
    if (!deep_disabled.empty()) {
        std::vector<std::string> parts;
        for (const auto& [state, cpus] : deep_disabled) parts.push_back(state + " on CPUs " + cpus.to_list());
        Finding& finding = out.fire("deep CPU idle state disabled: " + join(parts, ", ") +
                                    ": idle cores cannot enter it, so busy cores get less turbo headroom");
        std::vector<std::string> states;
        for (const auto& [state, cpus] : deep_disabled) states.push_back(state + " (CPUs " + cpus.to_list() + ")");
        finding.evidence.emplace_back("disabled", join(states, "; "));
        finding.evidence.emplace_back("source", in.ctx.node.power.source());
        finding.remediation.push_back(RemediationOp::manual_step(
            "re-enable the idle states on the node, as root: cpupower idle-set -E (or write 0 to "
            "/sys/devices/system/cpu/cpu*/cpuidle/stateN/disable), and remove what disabled them (a boot script or "
            "tuned profile running cpupower idle-set -d)"));
    }
}

// A node-wide switch (intel_pstate/no_turbo, cpufreq/boost) that turns turbo off.
void report_turbo_switch(RuleOutput& out, const std::string& file, const std::string& value, const std::string& feature,
                         const std::string& source, const std::string& how_to_enable) {
    Finding& finding = out.fire(file + "=" + value + ": " + feature +
                                " is off on every core, so the CPUs never run above their base clock");
    finding.evidence.emplace_back(file, value);
    finding.evidence.emplace_back("source", source);
    finding.remediation.push_back(RemediationOp::manual_step("on the node, as root: " + how_to_enable));
}

void check_turbo(const RuleInput& in, RuleOutput& out) {
    const CpuPower* power = power_or_unknown(in, out, "whether turbo is available");
    if (power == nullptr) return;
    const std::string& source = in.ctx.node.power.source();
    bool any_fact = power->intel_no_turbo.has_value() || power->cpufreq_boost.has_value();

    if (power->intel_no_turbo.value_or(false)) {
        report_turbo_switch(out, "intel_pstate/no_turbo", "1", "Turbo Boost", source,
                            "echo 0 > /sys/devices/system/cpu/intel_pstate/no_turbo, and make sure Turbo Boost is "
                            "enabled in the BIOS");
    }
    if (power->cpufreq_boost.has_value() && !*power->cpufreq_boost) {
        report_turbo_switch(out, "cpufreq/boost", "0", "frequency boost", source,
                            "echo 1 > /sys/devices/system/cpu/cpufreq/boost, and make sure Core Performance Boost / "
                            "Turbo is enabled in the BIOS");
    }

    // A cap below the hardware maximum on the CPUs that run the job.
    std::map<unsigned, long> comparable;
    for (const auto& [cpu, max] : power->cpuinfo_max_khz) {
        if (power->scaling_max_khz.count(cpu) != 0) comparable[cpu] = max;
    }
    any_fact = any_fact || !comparable.empty();
    if (!any_fact && rules::arm_node(in)) {
        // Arm has no intel_pstate, and cppc_cpufreq (Grace) shows cpufreq/boost only where the firmware offers
        // a boost range: only a cap is left to look for.
        out.unknown("cannot tell whether the CPU clock is capped because " + source +
                    " has no CPU with both scaling_max_freq and cpuinfo_max_freq");
        return;
    }
    if (!any_fact) {
        out.unknown("cannot tell whether turbo is available because " + source +
                    " has no intel_pstate/no_turbo, no cpufreq/boost and no CPU with both scaling_max_freq and "
                    "cpuinfo_max_freq");
        return;
    }
    CpuScope scope = job_scope(in.ctx, cpus_reporting(comparable));
    std::map<std::pair<long, long>, CpuSet> capped;  // (cap, max) -> CPUs
    for (unsigned cpu : scope.cpus.cpus()) {
        long cap = power->scaling_max_khz.at(cpu);
        long max = comparable.at(cpu);
        if (cap < max) capped[{cap, max}].add(cpu);
    }
    for (const auto& [limits, cpus] : capped) {
        Finding& finding = out.fire("scaling_max_freq caps CPUs " + cpus.to_list() + " at " + khz_as_ghz(limits.first) +
                                    ", below their " + khz_as_ghz(limits.second) + " maximum (cpuinfo_max_freq)");
        finding.evidence.emplace_back("scaling_max_freq", std::to_string(limits.first) + " kHz");
        finding.evidence.emplace_back("cpuinfo_max_freq", std::to_string(limits.second) + " kHz");
        finding.evidence.emplace_back("cpus_checked", scope.description);
        finding.evidence.emplace_back("source", source);
        if (in.ctx.env) {
            if (auto it = in.ctx.env->find("SLURM_CPU_FREQ_REQ"); it != in.ctx.env->end()) {
                finding.evidence.emplace_back("SLURM_CPU_FREQ_REQ", it->second);
            }
        }
        finding.remediation.push_back(RemediationOp::manual_step(
            "lift the cap on the node, as root: cpupower frequency-set -u " + std::to_string(limits.second) +
            "kHz; look for what set it (a tuned or power-capping profile, srun --cpu-freq / SLURM_CPU_FREQ_REQ, "
            "Slurm's CpuFreqDef)"));
    }
}

constexpr BoolParameter kNumaBalancingAllowed{"cpu.numa_balancing_allowed", false,
                                              "true keeps the rule quiet: the node class runs with balancing on"};
constexpr auto kNumaBalancingParameters = parameter_list(kNumaBalancingAllowed);

void check_numa_balancing(const RuleInput& in, RuleOutput& out) {
    if (kNumaBalancingAllowed.in(in.profile)) return;
    const auto& balancing = in.ctx.node.numa_balancing;
    if (!balancing) {
        out.unknown("cannot tell whether automatic NUMA balancing is on because " + balancing.reason());
        return;
    }
    if (!*balancing) return;
    Finding& finding = out.fire(
        "kernel.numa_balancing is on: the kernel keeps unmapping the job's pages to "
        "sample accesses and migrates them between NUMA nodes while it runs");
    finding.evidence.emplace_back("kernel.numa_balancing", "enabled");
    finding.evidence.emplace_back("source", balancing.source());
    finding.evidence.emplace_back("numa_balancing_allowed", "false (profile " + in.profile.name + ")");
    finding.remediation.push_back(RemediationOp::manual_step(
        "on the node, as root: sysctl -w kernel.numa_balancing=0, persisted in /etc/sysctl.d/, or boot with "
        "numa_balancing=disable (as Azure's GB200 images do)"));
}

const TableRule kGovernor{
    RuleInfo{
        .id = "power.governor",
        .title = "cpufreq governor is not the profile's",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Reads cpufreq/scaling_governor of each CPU in the task's CPU mask (every CPU when the mask is "
                  "unknown, as in the node prolog) and fires when any differs from the profile's cpu.governor "
                  "(default performance), like the NVIDIA Exemplar prescreen's check_cpu_governor.",
        .why = "powersave, ondemand or schedutil keep idle cores at low clocks and raise them only after load "
               "appears; the short, bursty CPU work of a training step (kernel launches, NCCL proxy threads, "
               "data loading) then runs on cores that have not ramped up. Part of field case 2.",
        .evidence = "Each governor found with the CPUs running it, the profile's governor, which CPUs were "
                    "checked, and the sysfs directory read.",
        .fix = "cpupower frequency-set -g performance on every node, made persistent with a tuned profile, a "
               "systemd unit or cpufreq.default_governor=performance on the kernel command line. Profiles for "
               "VMs whose hypervisor owns frequency scaling set this rule to off.",
        .parameters = kGovernorParameters,
    },
    check_governor};

const TableRule kCstates{
    RuleInfo{
        .id = "power.cstates",
        .title = "Deep CPU idle states unavailable",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Counts the cpuidle states each CPU of the node exposes and fires when a CPU has fewer than the "
                  "profile's cpu.min_idle_states (default 3, i.e. 2 or fewer, as the NVIDIA Exemplar prescreen's "
                  "check_cpu_cstates warns) — a CPU without cpuidle states counts as 0. Separately fires when a "
                  "deep state (state2 and up; state0 is the polling loop, state1 the shallowest halt) is disabled. "
                  "All CPUs count, not only the task's: the headroom comes from the idle ones. On Arm nodes "
                  "(aarch64, or a Grace profile) the count does not apply: Grace has one idle state, WFI, and no "
                  "turbo.",
        .why = "Turbo clocks depend on the package's power budget; cores in deep C-states (C6) free it for the "
               "busy ones. With deep C-states disabled in firmware or capped by the kernel (intel_idle.max_cstate, "
               "processor.max_cstate, idle=poll), cores stay below expected boost clocks. Field case 2: H100 "
               "nodes whose BIOS C-state settings kept cores below turbo.",
        .evidence = "The number of states per CPU group and their names, the profile's minimum, kernel parameters "
                    "that limit idle states, the disabled deep states with their CPUs, and the sysfs directory read.",
        .fix = "Enable deep core and package C-states in the BIOS and remove kernel limits such as "
               "intel_idle.max_cstate=1 or idle=poll; re-enable disabled states with cpupower idle-set -E and remove "
               "what disabled them (a boot script or tuned profile running cpupower idle-set -d).",
        .parameters = kCstatesParameters,
    },
    check_cstates};

const TableRule kTurboOff{
    RuleInfo{
        .id = "power.turbo-off",
        .title = "CPU turbo disabled or capped",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Fires for intel_pstate/no_turbo=1, for cpufreq/boost=0 (acpi-cpufreq, amd-pstate), and for each "
                  "group of the task's CPUs (every CPU when the mask is unknown) whose scaling_max_freq is below "
                  "cpuinfo_max_freq.",
        .why = "Without turbo, or with a frequency cap, every core runs at most at its base or capped clock; the "
               "CPU-bound parts of a step (launch overhead, NCCL proxy progress, data loading) take longer on every "
               "rank and the slowest node sets the pace. Part of field case 2.",
        .evidence = "The no_turbo or boost value, or the cap and maximum in kHz with the CPUs concerned, "
                    "SLURM_CPU_FREQ_REQ when Slurm set a frequency request, and the sysfs directory read.",
        .fix = "echo 0 > /sys/devices/system/cpu/intel_pstate/no_turbo or echo 1 > "
               "/sys/devices/system/cpu/cpufreq/boost, with turbo enabled in the BIOS; lift caps with cpupower "
               "frequency-set -u <max> and remove their origin (tuned or power-capping profiles, srun --cpu-freq, "
               "Slurm CpuFreqDef).",
    },
    check_turbo};

const TableRule kNumaBalancing{
    RuleInfo{
        .id = "numa.balancing-on",
        .title = "Automatic NUMA balancing is on",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Reads /proc/sys/kernel/numa_balancing and fires when it is non-zero (1 = balancing, 2 = memory "
                  "tiering), unless the profile sets cpu.numa_balancing_allowed.",
        .why = "The kernel periodically unmaps the job's pages to sample which node touches them, takes NUMA "
               "hinting faults on the next access and migrates pages; a job that is already bound to its GPU's "
               "NUMA node gains nothing and pays the faults and migrations, with jitter on every rank. Azure's "
               "GB200 images boot with numa_balancing=disable; the Exemplar prescreen reports the setting.",
        .evidence = "The setting and the procfs path it was read from.",
        .fix = "sysctl -w kernel.numa_balancing=0, persisted in /etc/sysctl.d/, or numa_balancing=disable on the "
               "kernel command line.",
        .parameters = kNumaBalancingParameters,
    },
    check_numa_balancing};

}  // namespace

void register_power_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kGovernor);
    rules.push_back(&kCstates);
    rules.push_back(&kTurboOff);
    rules.push_back(&kNumaBalancing);
}

}  // namespace launchguard
