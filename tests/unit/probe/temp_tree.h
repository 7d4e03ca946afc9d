// A scratch directory tree for probe tests that need what a committed
// fixture cannot hold: permissions, dangling links, loops.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace launchguard::test {

class TempTree {
public:
    TempTree() {
        std::string templ = (std::filesystem::temp_directory_path() / "launchguard-probe-XXXXXX").string();
        if (::mkdtemp(templ.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
        root_ = templ;
    }
    ~TempTree() {
        std::error_code ec;
        // Restore permissions first so the tree can be removed.
        for (auto it = std::filesystem::recursive_directory_iterator(root_, ec);
             it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
            if (!it->is_symlink())
                std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                             std::filesystem::perm_options::add, ec);
        }
        std::filesystem::remove_all(root_, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    [[nodiscard]] const std::string& root() const { return root_; }
    [[nodiscard]] std::string path(const std::string& rel) const { return root_ + "/" + rel; }

    void write(const std::string& rel, const std::string& content) const {
        auto p = std::filesystem::path(path(rel));
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
    }
    void mkdir(const std::string& rel) const { std::filesystem::create_directories(path(rel)); }
    void symlink(const std::string& target, const std::string& rel) const {
        auto p = std::filesystem::path(path(rel));
        std::filesystem::create_directories(p.parent_path());
        std::filesystem::create_symlink(target, p);
    }

private:
    std::string root_;
};

}  // namespace launchguard::test
