// The reading primitives the sysfs probes share (sysfs_probe.cpp,
// sysfs_pci_probe.cpp, sysfs_net_probe.cpp): directory listings, short
// attributes and links, each recorded when a RecordSysfsReads is active on
// the thread. Internal to the probe layer.
#pragma once

#include <fcntl.h>

#include <charconv>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "util/file_descriptor.h"

namespace launchguard::sysfs {

bool is_live(const std::string& root);
// Whether a RecordSysfsReads is active on this thread.
bool recording_reads();
void record_file(const std::string& path, const std::string& content);
void record_directory(const std::string& path);
void record_link(const std::string& path, const std::filesystem::path& resolved);

// Directory entry names, sorted; empty when the directory is absent. Uses
// error codes: a vanished sysfs entry must not throw out of a probe.
std::vector<std::string> entries(const std::string& dir);
bool is_dir(const std::string& path);
// A short sysfs or procfs attribute, without surrounding whitespace; nullopt
// when it cannot be read (absent, permission, an attribute that errors on read).
std::optional<std::string> read_attribute(const std::string& path);
// "cpu12" -> 12, for the per-CPU directories only.
std::optional<unsigned> numbered(std::string_view name, std::string_view prefix);
std::optional<bool> read_flag(const std::string& path);
bool contains(const std::string& haystack, std::string_view needle);

template <typename T>
std::optional<T> read_number(const std::string& path) {
    auto text = read_attribute(path);
    if (!text) return std::nullopt;
    T v{};
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
    return v;
}

template <typename T>
std::optional<T> parse_number(const std::optional<std::string>& text) {
    if (!text) return std::nullopt;
    T v{};
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
    return v;
}

// The attributes of one sysfs directory (a CPU's), read relative to it.
// read_attribute goes through read_text_file, which looks at the whole path
// before it opens it and then reads to the end: six system calls and two
// walks of an eight-component path per file. probe_power reads eleven files
// per CPU on a node with four idle states, and on 128 CPUs that took 14 ms of
// every Slurm step, most of what the step then waited for
// (docs/performance.md). Here a file costs an openat of the short relative
// path, one read and a close, and an fstatat first outside the live sysfs
// (a recorded tree may hold anything; sysfs holds no FIFOs or devices). An
// attribute is at most a page, and a short read of a regular file is its
// end; a file that fills the page is read the usual way.
class AttributeDir {
public:
    explicit AttributeDir(std::string path, bool live)
        : path_(std::move(path)), live_(live), fd_(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}

    // The attribute without surrounding whitespace, as read_attribute gives it.
    std::optional<std::string> read(const std::string& relative);

private:
    static constexpr std::size_t kPage = 4096;
    std::string path_;
    bool live_;
    UniqueFd fd_;
    std::string buffer_;
};

}  // namespace launchguard::sysfs
