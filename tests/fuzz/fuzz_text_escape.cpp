// The writers' escaping: valid_utf8() always yields valid UTF-8 and leaves
// valid input alone; printable_text() never lets a control byte through.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "util/text_escape.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string valid = launchguard::valid_utf8(text);
    if (launchguard::valid_utf8(valid) != valid) std::abort();
    std::string shown = launchguard::printable_text(text);
    for (unsigned char c : shown) {
        if (c < 0x20 || c == 0x7F) std::abort();
    }
    if (launchguard::valid_utf8(shown) != shown) std::abort();
    return 0;
}
