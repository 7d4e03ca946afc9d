#include "util/file_descriptor.h"

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace launchguard {

UniqueFd::~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
}

bool write_all(int fd, std::string_view content) {
    while (!content.empty()) {
        ssize_t n = ::write(fd, content.data(), content.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        content.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace launchguard
