// What review_workload reads of an object, as a key: the object without its
// metadata, except the labels and annotations the review interprets
// (kShapeMetadataKeys in workload_spec.h). Names, uids, managedFields and
// per-pod labels differ between the pods of one Job and decide nothing.
// Two objects with the same review input get the same review (up to the
// name, which the caller adds); the webhook's review cache keys on this
// (webhook/review_cache.h). It lives here, beside the reader, so that a
// reader that starts to read more metadata changes the key with it.
#pragma once

#include <cstddef>

#include <boost/json/value.hpp>

namespace launchguard::kubernetes {

// The part of `object` the review reads, as a copy that owns its memory.
boost::json::value review_input(const boost::json::value& object);

// A hash that agrees with same_review_input: the same for an object and
// for its review_input, members in any order.
std::size_t review_input_hash(const boost::json::value& object);

// Whether `object` reads as `stored` (a review_input) to the review.
// Stricter than Boost.JSON's == on numbers (an int64 never equals a
// double): that can only turn a hit into a miss.
bool same_review_input(const boost::json::value& stored, const boost::json::value& object);

}  // namespace launchguard::kubernetes
