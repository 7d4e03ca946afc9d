// nccl.conf files (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf): NCCL's
// fgets-based parser and conf.lint's linter over what it yields. A lint fix
// never repeats the value it says is broken.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nccl/nccl_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto file = launchguard::nccl::parse_conf("/etc/nccl.conf", text);
    for (const auto& issue : launchguard::nccl::lint_conf(file)) {
        if (issue.line <= 0) std::abort();
    }
    for (const auto& entry : file.entries) {
        for (const auto& issue : launchguard::nccl::lint_value("environment", 0, entry.name, entry.value)) {
            // With no integer to offer there is no corrected line to repeat.
            if (issue.problem.rfind("not an integer", 0) == 0 && !issue.corrected.empty()) std::abort();
        }
    }
    return 0;
}
