#include "probe/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace launchguard {

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_file_error(path, 0, std::string("cannot open: ") + std::strerror(errno));
    std::string out;
    char buf[16384];
    while (out.size() < max_bytes) {
        ssize_t n = ::read(fd, buf, std::min(sizeof buf, max_bytes - out.size()));
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            return make_file_error(path, 0, std::string("cannot read: ") + std::strerror(err));
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

std::optional<std::string> read_trimmed(const std::string& path) {
    auto text = read_text_file(path, 1U << 20);
    if (!text) return std::nullopt;
    return std::string(trim(*text));
}

std::string_view trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

std::string under_root(const std::string& root, std::string_view relative) {
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
    std::string base = root.empty() ? std::string("/") : root;
    if (base.back() != '/') base += '/';
    return base + std::string(relative);
}

}  // namespace launchguard
