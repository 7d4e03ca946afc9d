// A listening Unix socket in a temporary directory of its own, for a test to
// accept on or to hand to the task service's loop; removed at the end.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace launchguard::test {

class UnixListener {
public:
    UnixListener() {
        static std::atomic<int> made{0};
        dir_ = std::filesystem::temp_directory_path() /
               ("lg-listener-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
        std::filesystem::create_directories(dir_);
        path_ = (dir_ / "task.sock").string();
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path_;
        EXPECT_EQ(::listen(fd_, 16), 0) << path_;
    }
    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;
    ~UnixListener() {
        ::close(fd_);
        std::filesystem::remove_all(dir_);
    }
    const std::string& path() const { return path_; }
    int fd() const { return fd_; }

private:
    std::filesystem::path dir_;
    std::string path_;
    int fd_ = -1;
};

}  // namespace launchguard::test
