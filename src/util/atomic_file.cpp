#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/file_descriptor.h"
#include "util/input_file.h"

namespace launchguard {

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
    // rename() replaces whatever the name holds: a device node (as root,
    // /dev/full would be gone), a FIFO or a socket another program listens
    // on, or a symlink (the link is replaced, not what it points at). Only a
    // regular file, or no file yet, is ours to replace.
    struct stat target {};
    if (::lstat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) {
        return make_file_error(path, 0,
                               "is " + file_type_name(target.st_mode) +
                                   ", not a regular file: refusing to replace it (give the path of a regular "
                                   "file or of one to create)");
    }
    // A fresh, unpredictable name beside the target (mkostemp: O_EXCL), so
    // two writers (slurmd's init and a prolog, two node checks) never write
    // into each other's file, and a FIFO or link planted at a guessable name
    // is never opened.
    std::string temporary = path + ".tmp.XXXXXX";
    int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
    if (fd < 0)
        return make_file_error(path, 0,
                               std::string("cannot create a temporary file beside it: ") + std::strerror(errno));
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
