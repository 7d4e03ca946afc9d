#include "util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/file_descriptor.h"
#include "util/size_parser.h"

namespace launchguard {
namespace {

// " (a symlink to /dev/zero)" when the path itself is a link, so the message
// names what the user actually pointed at.
std::string link_note(int directory, const std::string& path) {
    struct stat st {};
    if (::fstatat(directory, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) return {};
    std::array<char, 4096> target{};
    ssize_t n = ::readlinkat(directory, path.c_str(), target.data(), target.size() - 1);
    if (n <= 0) return " (a symlink)";
    return " (a symlink to " + std::string(target.data(), static_cast<std::size_t>(n)) + ")";
}

Error not_regular(int directory, const std::string& path, const std::string& shown_as, mode_t mode) {
    return make_file_error(shown_as, 0,
                           "is " + file_type_name(mode) + link_note(directory, path) +
                               ", not a regular file: launchguard reads only regular files");
}

Error too_large(const std::string& path, std::uint64_t size, std::size_t max_bytes, bool at_least) {
    return make_file_error(path, 0,
                           std::string("is ") + (at_least ? "more than " : "") + format_byte_size(size) +
                               ", larger than the " + format_byte_size(max_bytes) +
                               " launchguard reads from one file: not read, so what it holds is unknown");
}

}  // namespace

std::string file_type_name(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symlink";
    return "not a regular file";
}

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes, FollowLinks follow) {
    return read_text_file_at(AT_FDCWD, path, path, max_bytes, follow);
}

Result<std::string> read_text_file_at(int directory, const std::string& path, const std::string& shown_as,
                                      std::size_t max_bytes, FollowLinks follow) {
    // Look before opening: opening a FIFO for reading waits for a writer and
    // opening some devices has side effects.
    struct stat st {};
    if (::fstatat(directory, path.c_str(), &st, follow == FollowLinks::yes ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
        return make_file_error(shown_as, 0, std::string("cannot open: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(directory, path, shown_as, st.st_mode);
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        return too_large(shown_as, static_cast<std::uint64_t>(st.st_size), max_bytes, false);
    }

    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (follow == FollowLinks::no ? O_NOFOLLOW : 0);
    int fd = ::openat(directory, path.c_str(), flags);
    if (fd < 0) return make_file_error(shown_as, 0, std::string("cannot open: ") + std::strerror(errno));
    UniqueFd closer(fd);
    if (::fstat(fd, &st) != 0) return make_file_error(shown_as, 0, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(directory, path, shown_as, st.st_mode);

    // Read straight into the string. A stack buffer would be zeroed on every
    // call, and a task forked just before its check pays a page fault for
    // each 4 KiB of stack it touches (16 for 64 KiB: docs/performance.md).
    // sysfs and /proc report a size of 0 or 4096 and give a page per read.
    std::string out;
    std::size_t chunk = std::max<std::size_t>(static_cast<std::size_t>(st.st_size) + 1, 4096);
    // One byte past the bound tells a file of exactly max_bytes from a larger one.
    while (out.size() <= max_bytes) {
        const std::size_t have = out.size();
        const std::size_t want = std::min(chunk, max_bytes + 1 - have);
        out.resize(have + want);
        ssize_t n = ::read(fd, out.data() + have, want);
        if (n < 0) {
            out.resize(have);
            if (errno == EINTR) continue;
            return make_file_error(shown_as, 0, std::string("cannot read: ") + std::strerror(errno));
        }
        out.resize(have + static_cast<std::size_t>(n));
        if (n == 0) return out;
        chunk = std::max(chunk, out.size());
    }
    return too_large(shown_as, max_bytes, max_bytes, true);
}

}  // namespace launchguard
