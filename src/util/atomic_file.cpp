#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace launchguard {
namespace {

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

}  // namespace

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
    // The temporary name carries the pid: two writers (slurmd's init and a
    // prolog, two node checks) never write into each other's file.
    const std::string temporary = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return make_file_error(path, 0, std::string("cannot create ") + temporary + ": " + std::strerror(errno));
    bool written = write_all(fd, content);
    int saved_errno = errno;
    // fchmod, not the open mode: the umask would otherwise narrow it.
    if (written && ::fchmod(fd, mode) != 0) {
        written = false;
        saved_errno = errno;
    }
    if (::close(fd) != 0 && written) {
        written = false;
        saved_errno = errno;
    }
    if (!written) {
        ::unlink(temporary.c_str());
        return make_file_error(path, 0, std::string("cannot write ") + temporary + ": " + std::strerror(saved_errno));
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::string reason = std::strerror(errno);
        ::unlink(temporary.c_str());
        return make_file_error(path, 0, "cannot replace the file: " + reason);
    }
    return Done{};
}

}  // namespace launchguard
