// The first object of a YAML manifest, for the Kubernetes unit tests (null,
// with a test failure, when it does not read).
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include <boost/json/value.hpp>

#include "kubernetes/manifest_documents.h"

namespace launchguard::kubernetes {

inline boost::json::value parse_yaml(std::string_view yaml) {
    auto documents = read_manifest_documents(yaml, "test.yaml");
    EXPECT_TRUE(documents) << documents.error().to_string();
    if (!documents || documents->empty()) return nullptr;
    return documents->front().object;
}

}  // namespace launchguard::kubernetes
