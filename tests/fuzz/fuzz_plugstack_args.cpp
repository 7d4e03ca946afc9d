// plugstack.conf arguments of spank_launchguard.so (whitespace-separated
// words, as slurmd hands them to slurm_spank_init).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plugin_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> args;
    std::string word;
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n') {
            if (!word.empty()) args.push_back(word);
            word.clear();
        } else {
            word += c;
        }
    }
    if (!word.empty()) args.push_back(word);
    (void)launchguard::slurm::parse_plugin_args(args);
    return 0;
}
