// enroot's fstab lines (mounts.d/*.fstab, $ENROOT_MOUNTS) and environ lines
// ($ENROOT_ENVIRON). Escaping a path for fstab and reading it back is the
// identity, and an escaped field holds no blank.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/enroot_view.h"
#include "util/text_escape.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)launchguard::parse_enroot_fstab(text, "fuzz.fstab");
    (void)launchguard::parse_enroot_environ(text);
    std::string escaped = launchguard::fstab_escape(text);
    if (escaped.find_first_of(" \t\n") != std::string::npos) std::abort();
    if (launchguard::fstab_unescape(escaped) != text) std::abort();
    return 0;
}
