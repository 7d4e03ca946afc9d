#include "review_cache.h"

#include <boost/container_hash/hash.hpp>

#include <functional>
#include <string_view>

#include "kubernetes/review_input.h"

namespace launchguard::webhook {
namespace json = boost::json;
ReviewProbe review_probe(Endpoint endpoint, const Profile* profile, Mode mode, const json::value& object, unsigned gate,
                         std::string_view gate_warning) {
    std::size_t hash = kubernetes::review_input_hash(object);
    boost::hash_combine(hash, static_cast<std::size_t>(endpoint));
    boost::hash_combine(hash, static_cast<const void*>(profile));
    boost::hash_combine(hash, static_cast<std::size_t>(mode));
    boost::hash_combine(hash, static_cast<std::size_t>(gate));
    boost::hash_combine(hash, std::hash<std::string_view>{}(gate_warning));
    return ReviewProbe{endpoint, profile, mode, &object, hash, gate, gate_warning};
}

ReviewCache::ReviewCache(std::size_t max_entries, std::size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

bool ReviewCache::matches(const Entry& entry, const ReviewProbe& probe) {
    return entry.hash == probe.hash && entry.endpoint == probe.endpoint && entry.profile == probe.profile &&
           entry.mode == probe.mode && entry.gate == probe.gate && entry.gate_warning == probe.gate_warning &&
           kubernetes::same_review_input(entry.input, *probe.object);
}

std::shared_ptr<const Verdict> ReviewCache::find(const ReviewProbe& probe) {
    std::lock_guard lock(mutex_);
    auto [first, last] = by_hash_.equal_range(probe.hash);
    for (auto it = first; it != last; ++it) {
        if (matches(*it->second, probe)) {
            lru_.splice(lru_.begin(), lru_, it->second);
            ++hits_;
            return it->second->verdict;
        }
    }
    ++misses_;
    return nullptr;
}

void ReviewCache::insert(const ReviewProbe& probe, std::shared_ptr<const Verdict> verdict, std::size_t request_bytes) {
    if (max_entries_ == 0 || request_bytes > max_bytes_) return;
    // Copied before taking the lock; the copy owns its memory.
    Entry entry{probe.endpoint,
                probe.profile,
                probe.mode,
                probe.gate,
                std::string(probe.gate_warning),
                kubernetes::review_input(*probe.object),
                probe.hash,
                std::move(verdict),
                request_bytes};
    std::lock_guard lock(mutex_);
    auto [first, last] = by_hash_.equal_range(probe.hash);
    for (auto it = first; it != last; ++it) {
        if (matches(*it->second, probe)) return;  // another thread reviewed it meanwhile
    }
    lru_.push_front(std::move(entry));
    by_hash_.emplace(probe.hash, lru_.begin());
    bytes_ += request_bytes;
    while (lru_.size() > max_entries_ || bytes_ > max_bytes_) {
        auto oldest = std::prev(lru_.end());
        auto [from, to] = by_hash_.equal_range(oldest->hash);
        for (auto it = from; it != to; ++it) {
            if (it->second == oldest) {
                by_hash_.erase(it);
                break;
            }
        }
        bytes_ -= oldest->bytes;
        lru_.erase(oldest);
    }
}

ReviewCache::Counts ReviewCache::counts() const {
    std::lock_guard lock(mutex_);
    return Counts{hits_, misses_, lru_.size()};
}

}  // namespace launchguard::webhook
