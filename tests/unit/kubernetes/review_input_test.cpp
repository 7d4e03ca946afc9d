// The review's input, which the webhook's cache keys on: the object less
// the metadata the Kubernetes reader does not read.
#include "kubernetes/review_input.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {
namespace {
namespace json = boost::json;

json::value pod(const std::string& name, const std::string& replicas) {
    json::object labels{{"batch.kubernetes.io/job-completion-index", name}};
    labels[kJobSetGlobalReplicas] = replicas;
    return json::object{{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", json::object{{"name", name}, {"uid", name + "-uid"}, {"labels", labels}}},
                        {"spec", json::parse(R"({"containers":[{"name":"c","image":"i"}]})")}};
}

TEST(ReviewInput, KeepsTheShapeMetadataTheReaderReadsAndNothingElseOfTheMetadata) {
    const json::value input = review_input(pod("p-0", "4"));
    EXPECT_EQ(input.at("metadata").at("labels"), (json::object{{kJobSetGlobalReplicas, "4"}}));
    EXPECT_FALSE(input.at("metadata").as_object().contains("name"));
    EXPECT_EQ(input.at("spec"), pod("x", "4").at("spec"));
    // The pods of one Job read alike; a different shape does not.
    EXPECT_TRUE(same_review_input(input, pod("p-1", "4")));
    EXPECT_EQ(review_input_hash(input), review_input_hash(pod("p-1", "4")));
    EXPECT_FALSE(same_review_input(input, pod("p-1", "8")));
    json::value other_spec = pod("p-1", "4");
    other_spec.at("spec").at("containers").at(0).as_object()["image"] = "j";
    EXPECT_FALSE(same_review_input(input, other_spec));
}

}  // namespace
}  // namespace launchguard::kubernetes
