// The review cache: an object admitted again under the same profile and
// mode gets the same answer without a review, and nothing else does.
#include "review_cache.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>
#include <boost/json.hpp>

#include "admission.h"
#include "observe.h"

namespace launchguard::webhook {
namespace {
namespace json = boost::json;

// The example of docs/kubernetes.md, "What is patched": a profile that needs
// a topology file, a GPU pod without it. /mutate patches it, /validate denies it.
json::value gpu_pod(const std::string& name) {
    return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","uid":")" + name +
                       R"(-uid","labels":{"controller-uid":"c1","batch.kubernetes.io/job-completion-index":")" + name +
                       R"("}},"spec":{"containers":[{"name":"train","image":"nvcr.io/nvidia/pytorch:24.01-py3",
                       "resources":{"limits":{"nvidia.com/gpu":"8"}}}]}})");
}

std::string review_of(const json::value& object, const std::string& uid, bool dry_run = false) {
    json::object review{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}};
    review["request"] = json::object{{"uid", uid}, {"object", object}, {"dryRun", dry_run}};
    return json::serialize(review);
}

class ReviewCacheTest : public ::testing::Test {
protected:
    WebhookConfig config =
        default_webhook_config(std::string(LAUNCHGUARD_FIXTURES) + "/k8s/ndv5-topology-profile.yaml", Mode::enforce)
            .value();
    Metrics metrics;
    Log log{LogFormat::json, std::make_shared<spdlog::sinks::null_sink_mt>()};
    ReviewCache cache{16, 1U << 20};

    json::object respond(Endpoint endpoint, const std::string& body, ReviewCache* with = nullptr) {
        Answer answer = handle_admission(endpoint, body, config, with);
        observe(metrics, log,
                Served{endpoint == Endpoint::mutate ? "/mutate" : "/validate", answer.status, {}, &answer, {}});
        EXPECT_EQ(answer.status, 200U) << answer.body;
        return json::parse(answer.body).at("response").as_object();
    }
};

TEST_F(ReviewCacheTest, ThePodsOfOneJobShareAVerdictThatEqualsAFreshReview) {
    for (Endpoint endpoint : {Endpoint::mutate, Endpoint::validate}) {
        json::object first = respond(endpoint, review_of(gpu_pod("job-0"), "u0"), &cache);
        json::object second = respond(endpoint, review_of(gpu_pod("job-1"), "u1"), &cache);
        json::object uncached = respond(endpoint, review_of(gpu_pod("job-1"), "u1"));
        EXPECT_EQ(second.at("uid"), "u1");
        EXPECT_EQ(second, uncached);
        first["uid"] = "u1";
        EXPECT_EQ(first, second);
    }
    // The first pod of each endpoint was reviewed, the second answered from the cache.
    EXPECT_EQ(cache.counts().hits, 2U);
    EXPECT_EQ(cache.counts().misses, 2U);
    const std::string text = metrics.render();
    EXPECT_NE(text.find("launchguard_webhook_review_cache_lookups_total{result=\"hit\"} 2"), std::string::npos) << text;
    // Counters count every admission, cached or not: three per endpoint,
    // patched at /mutate and blocked at /validate.
    EXPECT_NE(text.find("launchguard_webhook_findings_total{rule=\"topo.required\",action=\"patch\"} 3"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("launchguard_webhook_findings_total{rule=\"topo.required\",action=\"block\"} 3"),
              std::string::npos)
        << text;
}

TEST_F(ReviewCacheTest, WhatTheReviewReadsIsPartOfTheKey) {
    respond(Endpoint::mutate, review_of(gpu_pod("a"), "u"), &cache);

    json::value other_spec = gpu_pod("a");
    other_spec.at("spec").at("containers").as_array()[0].as_object()["env"] =
        json::array{json::object{{"name", "NCCL_TOPO_FILE"}, {"value", "/opt/microsoft/ndv5-topo.xml"}}};
    json::object patched = respond(Endpoint::mutate, review_of(other_spec, "u"), &cache);
    EXPECT_NE(patched.at("patch"), respond(Endpoint::mutate, review_of(gpu_pod("a"), "u")).at("patch"));

    json::value jobset_pod = gpu_pod("a");
    jobset_pod.at("metadata").at("labels").as_object()["jobset.sigs.k8s.io/global-replicas"] = "4";
    respond(Endpoint::mutate, review_of(jobset_pod, "u"), &cache);

    respond(Endpoint::validate, review_of(gpu_pod("a"), "u"), &cache);
    EXPECT_EQ(cache.counts().hits, 0U);
    EXPECT_EQ(cache.counts().misses, 4U);
}

TEST_F(ReviewCacheTest, ACachedVerdictStillEchoesTheUidAndDryRun) {
    respond(Endpoint::validate, review_of(gpu_pod("a"), "u1"), &cache);
    json::object dry = respond(Endpoint::validate, review_of(gpu_pod("b"), "u2", true), &cache);
    EXPECT_EQ(cache.counts().hits, 1U);
    EXPECT_EQ(dry.at("uid"), "u2");
    EXPECT_EQ(dry.at("allowed"), false);
    EXPECT_EQ(dry.at("auditAnnotations").at("dryRun"), "true");
    json::object wet = respond(Endpoint::validate, review_of(gpu_pod("c"), "u3"), &cache);
    EXPECT_FALSE(wet.at("auditAnnotations").as_object().contains("dryRun"));
}

// The launch gate's warning quotes the pod's own annotation value, which is
// top-level metadata outside the review input: a second pod of the same spec
// with another value gets its own warning, not the first pod's.
TEST_F(ReviewCacheTest, EachPodGetsItsOwnGateWarningText) {
    config.gate.enabled = true;
    config.gate.image = "registry.example/launchguard:1.0";
    auto with_gate_annotation = [](const std::string& value) {
        json::value pod = gpu_pod("a");
        pod.at("metadata").as_object()["annotations"] = json::object{{"launchguard.dev/gate", value}};
        return pod;
    };
    auto gate_warning = [](const json::object& response) {
        for (const auto& line : response.at("warnings").as_array()) {
            if (line.as_string().starts_with("launchguard: launchguard.dev/gate="))
                return std::string(line.as_string());
        }
        return std::string("(no gate warning)");
    };
    const json::object first = respond(Endpoint::mutate, review_of(with_gate_annotation("maybe"), "u1"), &cache);
    const json::object second = respond(Endpoint::mutate, review_of(with_gate_annotation("perhaps"), "u2"), &cache);
    EXPECT_EQ(gate_warning(first),
              "launchguard: launchguard.dev/gate=maybe: expected off (or on); the launch gate is added");
    EXPECT_EQ(gate_warning(second),
              "launchguard: launchguard.dev/gate=perhaps: expected off (or on); the launch gate is added");
    EXPECT_EQ(cache.counts().hits, 0U);
    // The same value again is a hit, with the same text.
    const json::object third = respond(Endpoint::mutate, review_of(with_gate_annotation("perhaps"), "u3"), &cache);
    EXPECT_EQ(cache.counts().hits, 1U);
    EXPECT_EQ(gate_warning(third), gate_warning(second));
}

TEST(ReviewCache, EqualHashesAreNotEnough) {
    // A pod crafted to collide with an allowed pod's hash must not get its verdict.
    WebhookConfig config = default_webhook_config("default", Mode::enforce).value();
    const Profile* profile = &config.profiles.begin()->second;
    ReviewCache cache(16, 1U << 20);
    const json::value allowed_pod = json::parse(R"({"spec":1})");
    const json::value crafted_pod = json::parse(R"({"spec":2})");
    ReviewProbe allowed = review_probe(Endpoint::validate, profile, Mode::enforce, allowed_pod);
    ReviewProbe crafted = review_probe(Endpoint::validate, profile, Mode::enforce, crafted_pod);
    crafted.hash = allowed.hash;
    cache.insert(allowed, std::make_shared<const Verdict>(), 10);
    EXPECT_NE(cache.find(allowed), nullptr);
    EXPECT_EQ(cache.find(crafted), nullptr);
}

TEST(ReviewCache, OnlyTheMetadataTheReviewReadsCounts) {
    WebhookConfig config = default_webhook_config("default", Mode::enforce).value();
    const Profile* profile = &config.profiles.begin()->second;
    ReviewCache cache(16, 1U << 20);
    auto probe = [&](const json::value& object) {
        return review_probe(Endpoint::mutate, profile, Mode::enforce, object);
    };
    const json::value first = json::parse(
        R"({"metadata":{"name":"a","uid":"1","managedFields":[{"manager":"x"}],"labels":{"jobset.sigs.k8s.io/global-replicas":"2","index":"0"}},"spec":{}})");
    cache.insert(probe(first), std::make_shared<const Verdict>(), 10);
    const json::value sibling = json::parse(
        R"({"spec":{},"metadata":{"name":"b","uid":"2","labels":{"index":"1","jobset.sigs.k8s.io/global-replicas":"2"}}})");
    EXPECT_NE(cache.find(probe(sibling)), nullptr);
    const json::value larger =
        json::parse(R"({"metadata":{"name":"a","labels":{"jobset.sigs.k8s.io/global-replicas":"3"}},"spec":{}})");
    EXPECT_EQ(cache.find(probe(larger)), nullptr);
    const json::value as_annotation =
        json::parse(R"({"metadata":{"name":"a","annotations":{"jobset.sigs.k8s.io/global-replicas":"2"}},"spec":{}})");
    EXPECT_EQ(cache.find(probe(as_annotation)), nullptr);
    const json::value other_spec =
        json::parse(R"({"metadata":{"labels":{"jobset.sigs.k8s.io/global-replicas":"2"}},"spec":{"x":1}})");
    EXPECT_EQ(cache.find(probe(other_spec)), nullptr);
}

TEST(ReviewCache, StaysWithinItsEntriesAndBytes) {
    WebhookConfig config = default_webhook_config("default", Mode::enforce).value();
    const Profile* profile = &config.profiles.begin()->second;
    std::vector<json::value> objects;
    for (int i = 0; i < 10; ++i) objects.push_back(json::value{{"spec", i}});
    auto probe = [&](int i) { return review_probe(Endpoint::mutate, profile, Mode::enforce, objects[i]); };
    ReviewCache by_entries(3, 1U << 20);
    for (int i = 0; i < 5; ++i) by_entries.insert(probe(i), std::make_shared<const Verdict>(), 10);
    EXPECT_EQ(by_entries.counts().entries, 3U);
    EXPECT_EQ(by_entries.find(probe(0)), nullptr);  // least recently used went first
    EXPECT_NE(by_entries.find(probe(4)), nullptr);

    ReviewCache by_bytes(100, 1000);
    for (int i = 0; i < 5; ++i) by_bytes.insert(probe(i), std::make_shared<const Verdict>(), 400);
    EXPECT_EQ(by_bytes.counts().entries, 2U);
    by_bytes.insert(probe(9), std::make_shared<const Verdict>(), 2000);  // larger than the whole cache: not kept
    EXPECT_EQ(by_bytes.find(probe(9)), nullptr);

    ReviewCache off(0, 1U << 20);
    off.insert(probe(1), std::make_shared<const Verdict>(), 10);
    EXPECT_EQ(off.find(probe(1)), nullptr);
}

}  // namespace
}  // namespace launchguard::webhook
