// Reading node records from files and directories as a stream, within
// fleet's bounds, and choosing one record per host among the sources that
// claim it (fleet/fleet.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "fleet/fleet.h"
#include "node/node_record.h"
#include "util/text.h"

namespace launchguard::fleet {
namespace fs = std::filesystem;
namespace {

// Splits a stream into records: each starts on a line that begins with '{'
// (pretty-printed records close at column 0 and indent everything else, so
// this holds for a stream of them as for JSON lines). Text before the first
// record is a record of its own, so that it is reported rather than
// skipped. A record longer than kMaxRecordBytes is not kept, only noted.
class RecordSplitter {
public:
    RecordSplitter(std::string name, FleetInput& input, bool in_directory)
        : name_(std::move(name)), input_(input), in_directory_(in_directory) {}

    // False once reading should stop (the memory bound).
    bool feed(std::string_view bytes) {
        for (const char c : bytes) {
            if (at_line_start_ && c == '{') {
                if (!finish()) return false;
                start();
            } else if (!open_ && !std::isspace(static_cast<unsigned char>(c))) {
                start();
            }
            if (open_ && !oversized_) {
                chunk_ += c;
                if (chunk_.size() > kMaxRecordBytes) {
                    oversized_ = true;
                    std::string().swap(chunk_);
                }
            }
            at_line_start_ = c == '\n';
            if (c == '\n') ++line_;
        }
        return true;
    }

    bool finish() {
        if (!open_) return true;
        open_ = false;
        const std::string origin = name_ + ":" + std::to_string(start_line_);
        if (oversized_) {
            add_error(input_, {origin, "larger than " + std::to_string(kMaxRecordBytes >> 20) +
                                           " MiB: not a node record (those are kilobytes)"});
            return true;
        }
        RecordError error;
        auto node = parse_node_record(chunk_, origin, error, input_.now);
        std::string().swap(chunk_);
        if (!node) {
            add_error(input_, std::move(error));
            return true;
        }
        node->source = name_;
        const std::string own = record_file_name(node->hostname).value_or("");
        const std::string file = fs::path(name_).filename().string();
        node->own_source = !own.empty() && own == file;
        node->misplaced = in_directory_ && file.ends_with(".json") && !node->own_source;
        input_.memory += record_memory(*node);
        input_.nodes.push_back(std::move(*node));
        if (input_.memory > kMaxRecordMemory) {
            input_.incomplete = "reading stopped at " + origin + ": the records read hold more than " +
                                std::to_string(kMaxRecordMemory >> 20) + " MiB, fleet's bound";
            return false;
        }
        return true;
    }

private:
    void start() {
        open_ = true;
        oversized_ = false;
        start_line_ = line_;
        chunk_.clear();
    }

    std::string name_;
    FleetInput& input_;
    bool in_directory_;
    std::string chunk_;
    bool open_ = false;
    bool oversized_ = false;
    bool at_line_start_ = true;
    std::size_t line_ = 1;
    std::size_t start_line_ = 1;
};

void add_file(const std::string& path, FleetInput& input, bool in_directory) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        add_error(input, {path, std::string("cannot open: ") + std::strerror(errno)});
        return;
    }
    RecordSplitter splitter(path, input, in_directory);
    std::string block(std::size_t{64} << 10, '\0');
    bool more = true;
    while (more) {
        const ssize_t got = ::read(fd, block.data(), block.size());
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            add_error(input, {path, std::string("cannot read: ") + std::strerror(errno)});
            break;
        }
        if (got == 0) {
            splitter.finish();
            break;
        }
        more = splitter.feed(std::string_view(block.data(), static_cast<std::size_t>(got)));
    }
    ::close(fd);
}

struct Claim {
    std::int64_t time = 0;
    std::size_t index = 0;
};

std::string describe(const NodeRecord& node) {
    return node.origin + " (checked_at " + node.checked_at + ", " + (conforms(node) ? "conforms" : "does not conform") +
           (node.misplaced ? ", in a file named for another host" : "") + ")";
}

}  // namespace

void read_records_text(std::string_view text, const std::string& name, FleetInput& input, bool in_directory) {
    RecordSplitter splitter(name, input, in_directory);
    if (splitter.feed(text)) splitter.finish();
}

FleetInput read_fleet(const std::vector<std::string>& paths) {
    FleetInput input;
    input.source = "records";
    for (const auto& path : paths) {
        if (!input.incomplete.empty()) break;
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            std::vector<std::string> files;
            for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
                const std::string ext = it->path().extension().string();
                if ((ext == ".json" || ext == ".jsonl") && !it->path().filename().string().starts_with('.'))
                    files.push_back(it->path().string());
            }
            if (ec) add_error(input, {path, "cannot list the directory: " + ec.message()});
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                if (!input.incomplete.empty()) break;
                add_file(file, input, true);
            }
        } else {
            add_file(path, input, false);
        }
    }
    input.history = history_of_records(input.nodes);
    bound_history(input.history);
    keep_newest(input);
    return input;
}

void keep_newest(FleetInput& input) {
    // host -> source -> its records; a record without a readable time
    // (Prometheus without a timestamp series) sorts first.
    std::map<std::string, std::map<std::string, std::vector<Claim>>> hosts;
    for (std::size_t i = 0; i < input.nodes.size(); ++i) {
        const NodeRecord& node = input.nodes[i];
        hosts[node.hostname][node.source].push_back({parse_rfc3339(node.checked_at).value_or(INT64_MIN), i});
    }
    auto later = [](const Claim& a, const Claim& b) { return a.time != b.time ? a.time > b.time : a.index > b.index; };
    std::vector<NodeRecord> kept;
    kept.reserve(hosts.size());
    for (auto& [host, sources] : hosts) {
        // The newest record of each source, and of the host's own sources.
        std::vector<Claim> newest;
        std::optional<Claim> own;
        for (auto& [source, claims] : sources) {
            std::sort(claims.begin(), claims.end(), later);
            newest.push_back(claims.front());
            for (const Claim& c : claims) {
                if (input.nodes[c.index].own_source && (!own || later(c, *own))) own = c;
            }
        }
        std::sort(newest.begin(), newest.end(), later);
        const Claim chosen = own.value_or(newest.front());
        std::vector<std::string> contrary;
        for (const Claim& c : newest) {
            if (c.index == chosen.index) continue;
            const NodeRecord& other = input.nodes[c.index];
            const bool contradicts = own ? (c.time > chosen.time || other.misplaced)
                                         : conforms(other) != conforms(input.nodes[chosen.index]) || other.misplaced;
            if (contradicts) contrary.push_back(describe(other));
        }
        NodeRecord& node = input.nodes[chosen.index];
        if (node.misplaced || !contrary.empty()) {
            node.conflict = "the records of " + host + " disagree: " + describe(node);
            for (const auto& c : contrary) node.conflict += "; " + c;
            ++input.conflicts;
        }
        std::size_t records = 0;
        for (const auto& [source, claims] : sources) records += claims.size();
        input.superseded += records - 1;
        kept.push_back(std::move(node));
    }
    input.nodes = std::move(kept);
}

}  // namespace launchguard::fleet
