// libFuzzer target for the batch-script reader and --patched: any bytes must
// come back as a script or an error, without a crash, a hang or undefined
// behaviour; every step the reader finds (behind wrappers such as env,
// timeout, sudo, in subshells, several on one line) must have a place inside
// its line, and patching every step must give a script in which the reader
// finds the same steps, each carrying the added option as one known word;
// a step with an MPI launcher (mpirun -x, mpiexec -genv, alone or with srun)
// carries the added variable in the launcher's own syntax, as a known value.
//   scripts/sanitize.sh -L fuzz   (builds every fuzzer with ASan + UBSan)
//   build-sanitize/tests/fuzz/fuzz_batch_script -max_len=65536 corpus/ ../shared/fixtures/slurm
//   tests/fuzz/seeds/batch_script
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slurm_script/batch_script.h"
#include "slurm_script/script_patch.h"

namespace {

using launchguard::RemediationOp;
using launchguard::Runtime;
using namespace launchguard::slurm_script;

// A fix for every step, with a value that needs quoting.
std::vector<StepFixes> fixes_for(const BatchScript& script) {
    std::vector<StepFixes> fixes;
    for (const auto& step : script.steps) {
        StepFixes fix;
        fix.step_line = step.line;
        fix.options_line = step.options_line;
        fix.options_column = step.options_column;
        fix.runtime = Runtime::pyxis;
        RemediationOp mount;
        mount.kind = RemediationOp::Kind::mount_file;
        mount.host_path = "/opt/$(touch x) 'q'/topo.xml";
        mount.container_path = "/opt/topo.xml";
        mount.readonly = true;
        fix.ops.push_back(mount);
        if (step.mpi) {
            fix.mpi = step.mpi;
            fix.mpi_options_line = step.mpi_options_line;
            fix.mpi_options_column = step.mpi_options_column;
            fix.ops.push_back(RemediationOp::set_env("LAUNCHGUARD_FUZZ", "a b'$(c)"));
        }
        fixes.push_back(std::move(fix));
    }
    return fixes;
}

void check_patch(const BatchScript& script) {
    auto patched = apply_fixes(script, fixes_for(script));
    if (!patched) __builtin_trap();  // the value above is writable
    auto again = parse_batch_script(patched.value(), "patched.sbatch");
    if (!again) return;  // grew past a bound (size, steps): refused, which is safe
    if (again.value().steps.size() != script.steps.size()) __builtin_trap();
    for (std::size_t i = 0; i < script.steps.size(); ++i) {
        if (script.steps[i].options_line == 0) continue;  // patched through a comment, not in place
        bool carried = false;
        for (const auto& option : again.value().steps[i].options) {
            if (option.is("--container-mounts") && option.value_known &&
                option.value == "/opt/$(touch x) 'q'/topo.xml:/opt/topo.xml:ro") {
                carried = true;
            }
        }
        if (!carried) __builtin_trap();
    }
    for (std::size_t i = 0; i < script.steps.size(); ++i) {
        if (!script.steps[i].mpi || script.steps[i].mpi_options_line == 0) continue;
        // An MPI step that set the variable must hand its value to the ranks.
        const auto& env = again.value().steps[i].environment;
        auto it = env.find("LAUNCHGUARD_FUZZ");
        const auto& step = again.value().steps[i];
        bool filtered = std::any_of(step.options.begin(), step.options.end(),
                                    [](const Option& option) { return option.is("--export"); });
        if (!step.environment_complete || filtered) continue;  // srun --export may drop what mpirun passed
        if (it == env.end() || !it->second.value || *it->second.value != "a b'$(c)") __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)looks_like_batch_script(text);
    auto script = parse_batch_script(text, "fuzz.sbatch");
    if (!script) return 0;
    const BatchScript& parsed = script.value();
    if (parsed.steps.size() > kMaxSteps) __builtin_trap();
    for (const auto& step : parsed.steps) {
        // Every step points into the script, and its options' place into its line.
        if (step.line < 1 || static_cast<std::size_t>(step.line) > parsed.lines.size() + 1) __builtin_trap();
        if (step.options_line < 0 || static_cast<std::size_t>(step.options_line) > parsed.lines.size())
            __builtin_trap();
        if (step.options_line > 0) {
            const std::string& line = parsed.lines[static_cast<std::size_t>(step.options_line - 1)];
            if (step.options_column > line.size()) __builtin_trap();
        }
        if (step.mpi_options_line < 0 || static_cast<std::size_t>(step.mpi_options_line) > parsed.lines.size())
            __builtin_trap();
        if (step.mpi_options_line > 0 &&
            step.mpi_options_column > parsed.lines[static_cast<std::size_t>(step.mpi_options_line - 1)].size())
            __builtin_trap();
    }
    check_patch(parsed);
    return 0;
}
