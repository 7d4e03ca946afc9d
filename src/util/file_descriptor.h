// An owned file descriptor and a write that finishes: what every writer of
// files in launchguard (atomic replacement, `gather`) and the bounded reader
// need from the POSIX calls.
#pragma once

#include <string_view>
#include <utility>

namespace launchguard {

// Closes its descriptor on every return; movable, not copyable. -1 owns none.
class UniqueFd {
public:
    explicit UniqueFd(int fd = -1) : fd_(fd) {}
    ~UniqueFd();
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    [[nodiscard]] int get() const { return fd_; }

private:
    int fd_;
};

// Writes all of `content`, through short writes and EINTR; false on an error
// (errno says which).
bool write_all(int fd, std::string_view content);

}  // namespace launchguard
