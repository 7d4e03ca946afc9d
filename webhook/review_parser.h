// Parses an AdmissionReview body as boost::json::parse would, leaving out
// what no review reads and every real request carries: the object's
// metadata.managedFields (often most of its bytes) and request.oldObject
// (the whole previous object on UPDATE). Both are still checked as JSON,
// as strictly as the rest, by a scanner that passes over them without
// tokenizing them through basic_parser; they are never built as values.
// This was the largest cost of a cached admission (docs/performance.md).
#pragma once

#include <string_view>
#include <system_error>

#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

namespace launchguard::webhook {

boost::json::value parse_admission_review(std::string_view body, std::error_code& ec, boost::json::storage_ptr storage,
                                          const boost::json::parse_options& options);

}  // namespace launchguard::webhook
