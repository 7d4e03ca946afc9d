// Reading sysfs and procfs, and recording what was read (sysfs_reading.h).
#include "probe/sysfs_reading.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "probe/sysfs_probe.h"
#include "probe/text_file.h"
#include "util/input_file.h"
#include "util/text.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;

// The recording of this thread's gather, if one is under way.
thread_local RecordSysfsReads::Active* t_recording = nullptr;

}  // namespace

struct RecordSysfsReads::Active {
    SysfsRecording& recording;
    std::string prefix;           // "/" or "/fixture/": what the probes' paths start with
    std::string resolved_prefix;  // the same with links resolved, for resolved paths
};

RecordSysfsReads::RecordSysfsReads(SysfsRecording& recording, const std::string& root) : previous_(t_recording) {
    std::error_code ec;
    fs::path resolved = fs::canonical(root.empty() ? "/" : root, ec);
    active_ = std::make_unique<Active>(
        Active{recording, under_root(root, ""), ec ? std::string() : under_root(resolved.string(), "")});
    t_recording = active_.get();
}

RecordSysfsReads::~RecordSysfsReads() { t_recording = previous_; }

namespace sysfs {
namespace {

// `path` below `prefix`, without it; nullopt when it is not below it.
std::optional<std::string> below(const std::string& path, const std::string& prefix) {
    if (prefix.empty() || path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) {
        return std::nullopt;
    }
    return path.substr(prefix.size());
}

void record_other_entry(const std::string& path) {
    if (!recording_reads()) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.other_entries.insert(*relative);
}

}  // namespace

bool is_live(const std::string& root) { return root.empty() || root == "/"; }

bool recording_reads() { return t_recording != nullptr; }

void record_file(const std::string& path, const std::string& content) {
    if (!recording_reads()) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.files[*relative] = content;
}

void record_directory(const std::string& path) {
    if (!recording_reads()) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.directories.insert(*relative);
}

void record_link(const std::string& path, const fs::path& resolved) {
    if (!recording_reads()) return;
    auto relative = below(path, t_recording->prefix);
    if (!relative) return;
    auto target = below(resolved.string(), t_recording->resolved_prefix);
    t_recording->recording.links[*relative] = target ? *target : "sys/devices/" + resolved.filename().string();
}

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) return names;
    record_directory(dir);
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        // sysfs and procfs have no hidden names; a recorded tree in git has
        // .keep files, or its empty directories (no IOMMU group) are lost.
        if (it->path().filename().string().starts_with('.')) continue;
        names.push_back(it->path().filename().string());
        // The probes go by the names in a listing (cpu12, state3, a bus id)
        // even when they read nothing inside them.
        if (recording_reads()) {
            std::error_code type_ec;
            if (it->is_directory(type_ec))
                record_directory(it->path().string());
            else
                record_other_entry(it->path().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool is_dir(const std::string& path) {
    std::error_code ec;
    const bool directory = fs::is_directory(path, ec);
    if (directory) record_directory(path);
    return directory;
}

std::optional<std::string> read_attribute(const std::string& path) {
    auto text = read_text_file(path, kMaxAttributeBytes);
    if (!text) return std::nullopt;
    record_file(path, *text);
    return std::string(trim(*text));
}

std::optional<unsigned> numbered(std::string_view name, std::string_view prefix) {
    if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) return std::nullopt;
    unsigned v = 0;
    auto digits = name.substr(prefix.size());
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
    return v;
}

std::optional<bool> read_flag(const std::string& path) {
    auto v = read_number<long>(path);
    if (!v) return std::nullopt;
    return *v != 0;
}

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

std::optional<std::string> AttributeDir::read(const std::string& relative) {
    if (fd_.get() < 0) return std::nullopt;
    if (!live_) {
        struct stat st {};
        if (::fstatat(fd_.get(), relative.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    }
    UniqueFd file(::openat(fd_.get(), relative.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (file.get() < 0) return std::nullopt;
    buffer_.resize(kPage);
    ssize_t n = 0;
    do {
        n = ::read(file.get(), buffer_.data(), buffer_.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return std::nullopt;
    if (static_cast<std::size_t>(n) == buffer_.size()) return read_attribute(path_ + "/" + relative);
    buffer_.resize(static_cast<std::size_t>(n));
    if (recording_reads()) record_file(path_ + "/" + relative, buffer_);
    return std::string(trim(buffer_));
}

}  // namespace sysfs
}  // namespace launchguard
