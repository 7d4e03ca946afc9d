// libFuzzer target for the batch-script reader: any bytes must come back as a
// script or an error, without a crash, a hang or undefined behaviour.
//   scripts/sanitize.sh -L fuzz   (builds every fuzzer with ASan + UBSan)
//   build-sanitize/tests/fuzz/fuzz_batch_script -max_len=65536 corpus/ tests/fixtures/slurm
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "slurm_script/batch_script.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)launchguard::slurm_script::looks_like_batch_script(text);
    auto script = launchguard::slurm_script::parse_batch_script(text, "fuzz.sbatch");
    if (script) {
        // Every step the reader reports must point into the script.
        for (const auto& step : script.value().steps) {
            if (step.line < 1 || static_cast<std::size_t>(step.line) > script.value().lines.size() + 1) __builtin_trap();
        }
    }
    return 0;
}
