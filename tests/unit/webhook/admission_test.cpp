// The AdmissionReview envelope: what the API server requires of every
// answer, whatever the workload. The workload judgements themselves are
// tested in tests/unit/kubernetes and end to end in tests/integration/webhook.
#include "admission.h"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <openssl/evp.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "observe.h"

namespace launchguard::webhook {
namespace {
namespace json = boost::json;

class AdmissionTest : public ::testing::Test {
protected:
    WebhookConfig config = default_webhook_config("default", Mode::enforce).value();
    Metrics metrics;
    Log log{LogFormat::json, std::make_shared<spdlog::sinks::null_sink_mt>()};

    // As the server calls it: the handler, then the wrapper that counts.
    Answer post(Endpoint endpoint, const std::string& body) {
        Answer answer = handle_admission(endpoint, body, config);
        observe(metrics, log,
                Served{endpoint == Endpoint::mutate ? "/mutate" : "/validate", answer.status, {}, &answer, {}});
        return answer;
    }
    static std::string review(const std::string& request) {
        return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":)" + request + "}";
    }
};

TEST_F(AdmissionTest, MalformedReviewsAreBadRequestsWithTheReason) {
    struct Case {
        std::string body;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {"", "not JSON"},
        {"{\"apiVersion\":", "not JSON"},
        {"[1,2]", "expected a JSON object"},
        {R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a"}})",
         "apiVersion must be admission.k8s.io/v1"},
        {R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"a"}})", "kind must be AdmissionReview"},
        {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "request is missing"},
        {review(R"({"object":{}})"), "request.uid is missing"},
        {review(R"({"uid":42})"), "request.uid is missing"},
    };
    for (const auto& c : cases) {
        for (Endpoint endpoint : {Endpoint::mutate, Endpoint::validate}) {
            Answer answer = post(endpoint, c.body);
            EXPECT_EQ(answer.status, 400U) << c.body;
            EXPECT_NE(answer.body.find(c.reason), std::string::npos) << answer.body;
        }
    }
    EXPECT_NE(metrics.render().find("launchguard_webhook_errors_total{reason=\"bad_request\"} 16"), std::string::npos);
}

TEST_F(AdmissionTest, ARequestWithoutAnObjectIsAllowedAndTheUidEchoed) {
    // DELETE and CONNECT carry no object.
    for (Endpoint endpoint : {Endpoint::mutate, Endpoint::validate}) {
        Answer answer = post(
            endpoint, review(R"({"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","operation":"DELETE","object":null})"));
        ASSERT_EQ(answer.status, 200U);
        json::value out = json::parse(answer.body);
        EXPECT_EQ(out.at("apiVersion"), "admission.k8s.io/v1");
        EXPECT_EQ(out.at("kind"), "AdmissionReview");
        EXPECT_EQ(out.at("response").at("uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
        EXPECT_EQ(out.at("response").at("allowed"), true);
        EXPECT_FALSE(out.at("response").as_object().contains("patch"));
        EXPECT_FALSE(out.at("response").as_object().contains("patchType"));
    }
}

TEST_F(AdmissionTest, ARefusedModeAnnotationIsDeniedAtValidateAndOnlyWarnedAtMutate) {
    const std::string body = review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"launchguard.dev/mode":"off"}},"spec":{"containers":[]}}})");
    json::value validate = json::parse(post(Endpoint::validate, body).body);
    EXPECT_EQ(validate.at("response").at("allowed"), false);
    EXPECT_EQ(validate.at("response").at("status").at("code"), 403);
    EXPECT_EQ(validate.at("response").at("status").at("message"),
              "launchguard: launchguard.dev/mode=off is not allowed on this cluster (allowed: enforce, warn)");
    json::value mutate = json::parse(post(Endpoint::mutate, body).body);
    EXPECT_EQ(mutate.at("response").at("allowed"), true);
    EXPECT_FALSE(mutate.at("response").as_object().contains("patch"));
    EXPECT_EQ(mutate.at("response").at("warnings").as_array().size(), 1U);
}

TEST_F(AdmissionTest, WarningsCarryNoControlCharactersFromTheSpec) {
    // An annotation value with ESC, CR and newline comes back in the warning
    // kubectl prints: escaped, so it cannot clear the screen or forge a line.
    const std::string body = review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"launchguard.dev/mode":"\u001b[2J\r\nWarning: ok\u0007"}},"spec":{"containers":[]}}})");
    json::value mutate = json::parse(post(Endpoint::mutate, body).body);
    const auto& warnings = mutate.at("response").at("warnings").as_array();
    ASSERT_EQ(warnings.size(), 1U);
    const std::string warning(warnings[0].as_string());
    for (char c : warning) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << warning;
    EXPECT_NE(warning.find(R"(launchguard.dev/mode=\x1B[2J\r\nWarning: ok\x07)"), std::string::npos) << warning;
}

TEST_F(AdmissionTest, DeeplyNestedOrHugeInputNeverCrashes) {
    std::string deep(100000, '[');
    EXPECT_EQ(post(Endpoint::validate, deep).status, 400U);
    std::string nested = review(R"({"uid":"u","object":)" + std::string(300, '[') + std::string(300, ']') + "}");
    EXPECT_EQ(post(Endpoint::validate, nested).status, 400U);
}

TEST(FitWarning, EscapesControlCharactersAndInvalidUtf8) {
    EXPECT_EQ(fit_warning("a\x1b]0;title\x07"
                          "b\r\nc\x9b"),
              R"(a\x1B]0;title\x07b\r\nc\x9B)");
    EXPECT_EQ(fit_warning("\xC3\xBC ok"), "\xC3\xBC ok");
}

TEST(FitWarning, CutsAtACharacterBoundaryWithinTheLimit) {
    EXPECT_EQ(fit_warning("short"), "short");
    std::string exact(120, 'x');
    EXPECT_EQ(fit_warning(exact), exact);
    std::string longer(121, 'x');
    EXPECT_EQ(fit_warning(longer), std::string(117, 'x') + "...");
    // 2-byte characters: 130 of them, cut to 117 characters + "...".
    std::string umlauts;
    for (int i = 0; i < 130; ++i) umlauts += "\xC3\xBC";
    std::string cut = fit_warning(umlauts);
    EXPECT_EQ(cut.size(), 117U * 2 + 3);
    EXPECT_EQ(cut.substr(cut.size() - 3), "...");
}

// The stages one by one: decode reads the envelope, decide reaches a
// verdict (through the cache when there is one), encode builds the bytes.
TEST_F(AdmissionTest, DecodeReadsTheEnvelopeAndNothingElse) {
    const json::value parsed = json::parse(review(
        R"({"uid":"u-1","namespace":"team","kind":{"group":"","version":"v1","kind":"Pod"},"dryRun":true,"object":{"kind":"Pod"}})"));
    auto request = decode_review(parsed);
    ASSERT_TRUE(request) << request.error().to_string();
    EXPECT_EQ(request->uid, "u-1");
    EXPECT_EQ(request->namespace_name, "team");
    EXPECT_EQ(request->kind, "Pod");
    EXPECT_TRUE(request->dry_run);
    ASSERT_NE(request->object, nullptr);
    EXPECT_EQ(*request->object, json::parse(R"({"kind":"Pod"})"));

    auto no_object = decode_review(json::parse(review(R"({"uid":"u-2","object":null})")));
    ASSERT_TRUE(no_object);
    EXPECT_EQ(no_object->object, nullptr);
    EXPECT_FALSE(no_object->dry_run);
    auto no_uid = decode_review(json::parse(review(R"({"object":{}})")));
    ASSERT_FALSE(no_uid);
    EXPECT_EQ(no_uid.error().message, "request.uid is missing");
}

TEST_F(AdmissionTest, DecideAnswersARepeatedObjectFromTheCacheWithTheSameVerdict) {
    const json::value parsed = json::parse(review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"nvidia.com/gpu":1}}}]}}})"));
    const AdmissionRequest request = decode_review(parsed).value();
    ReviewCache cache(4, 1U << 20);
    const Ruling first = decide(Endpoint::validate, request, config, &cache, 100);
    const Ruling second = decide(Endpoint::validate, request, config, &cache, 100);
    const Ruling uncached = decide(Endpoint::validate, request, config, nullptr, 100);
    EXPECT_EQ(first.cache_hit, std::optional<bool>(false));
    EXPECT_EQ(second.cache_hit, std::optional<bool>(true));
    EXPECT_EQ(second.verdict, first.verdict);  // the same verdict, shared
    EXPECT_FALSE(uncached.cache_hit.has_value());
    EXPECT_EQ(uncached.verdict->members, first.verdict->members);
    // A refusal is decided before the cache and never kept in it.
    const json::value refused = json::parse(review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"launchguard.dev/mode":"off"}},"spec":{"containers":[]}}})"));
    const Ruling refusal = decide(Endpoint::validate, decode_review(refused).value(), config, &cache, 100);
    EXPECT_FALSE(refusal.cache_hit.has_value());
    EXPECT_EQ(refusal.verdict->decision, "block");
    EXPECT_EQ(cache.counts().entries, 1U);
}

TEST_F(AdmissionTest, EncodeEchoesTheUidAndMarksADryRunInTheAudit) {
    const json::value parsed = json::parse(review(
        R"({"uid":"dry","dryRun":true,"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"launchguard.dev/mode":"off"}},"spec":{"containers":[]}}})"));
    const AdmissionRequest request = decode_review(parsed).value();
    const Answer answer = encode(request, decide(Endpoint::validate, request, config, nullptr, 0));
    EXPECT_EQ(answer.status, 200U);
    EXPECT_EQ(answer.content_type, "application/json");
    const json::value out = json::parse(answer.body);
    EXPECT_EQ(out.at("response").at("uid"), "dry");
    EXPECT_EQ(out.at("response").at("auditAnnotations").at("dryRun"), "true");
    EXPECT_EQ(answer.decision, "block");
    ASSERT_NE(answer.log.find("dry_run"), nullptr);
    ASSERT_NE(answer.log.find("profile"), nullptr);
    EXPECT_EQ(*answer.log.find("profile"), "default");

    const Answer failure = encode_failure(400, "bad_request", "request is missing");
    EXPECT_EQ(failure.status, 400U);
    EXPECT_EQ(failure.body, "launchguard: bad AdmissionReview: request is missing\n");
    EXPECT_EQ(failure.error, "bad_request");
}

// The handler counts nothing; the wrapper counts and logs each request once.
TEST_F(AdmissionTest, TheWrapperCountsAndLogsWhatTheHandlerReports) {
    std::ostringstream lines;
    Log json_log(LogFormat::json, std::make_shared<spdlog::sinks::ostream_sink_mt>(lines));
    Metrics counted;
    const Answer answer = handle_admission(Endpoint::mutate, review(R"({"uid":"w","object":null})"), config);
    EXPECT_EQ(metrics.render().find("decisions_total{"), std::string::npos);  // nothing counted yet
    observe(counted, json_log, Served{"/mutate", answer.status, std::chrono::microseconds(1500), &answer, {}});
    observe(counted, json_log, Served{"error", 413, {}, nullptr, "body_too_large"});
    const std::string text = counted.render();
    EXPECT_NE(text.find("launchguard_webhook_decisions_total{endpoint=\"/mutate\",decision=\"allow\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("launchguard_webhook_requests_total{endpoint=\"/mutate\",code=\"200\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_errors_total{reason=\"body_too_large\"} 1\n"), std::string::npos);
    const json::value line = json::parse(lines.str());  // one line: only the admission is logged
    EXPECT_EQ(line.at("msg"), "admission");
    EXPECT_EQ(line.at("uid"), "w");
    EXPECT_EQ(line.at("endpoint"), "/mutate");
    EXPECT_EQ(line.at("status"), "200");
    EXPECT_EQ(line.at("ms"), "1.500");
}

// The launch gate at /mutate: added to a GPU pod, the opt-out honoured
// only where the site allows it (else warned about, never denied), nothing
// at /validate, nothing when the gate is off.
class AdmissionGateTest : public AdmissionTest {
protected:
    AdmissionGateTest() {
        config.gate.enabled = true;
        config.gate.image = "registry.example/launchguard:1.0";
    }
    static std::string gpu_pod(const std::string& annotations = "{}") {
        return review(R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":)" +
                      annotations +
                      R"(},"spec":{"containers":[{"name":"c","image":"i","command":["python","t.py"],)"
                      R"("volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}],)"
                      R"("resources":{"limits":{"nvidia.com/gpu":1}}}],)"
                      R"("volumes":[{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"16Gi"}}]}}})");
    }
    static json::array patch_of(const json::value& answer) {
        const json::object& response = answer.at("response").as_object();
        if (!response.contains("patch")) return {};
        const std::string& encoded = std::string(response.at("patch").as_string());
        std::string decoded(encoded.size(), '\0');
        const int n =
            EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                            reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
        decoded.resize(static_cast<std::size_t>(std::max(n, 0)));
        while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // base64 padding
        return json::parse(decoded).as_array();
    }
    static std::vector<std::string> warnings_of(const json::value& answer) {
        std::vector<std::string> out;
        const json::object& response = answer.at("response").as_object();
        if (const json::value* w = response.if_contains("warnings")) {
            for (const auto& line : w->as_array()) out.emplace_back(line.as_string());
        }
        return out;
    }
    static bool adds_gate(const json::array& patch) {
        for (const auto& op : patch) {
            if (json::serialize(op).find("launchguard-gate-install") != std::string::npos) return true;
        }
        return false;
    }
};

TEST_F(AdmissionGateTest, AGpuPodGetsTheGateAtMutateOnlyAndTheDecisionStaysAllow) {
    json::value mutate = json::parse(post(Endpoint::mutate, gpu_pod()).body);
    EXPECT_EQ(mutate.at("response").at("allowed"), true);
    EXPECT_TRUE(adds_gate(patch_of(mutate)));
    EXPECT_EQ(mutate.at("response").at("auditAnnotations").at("gate"), "added");
    EXPECT_EQ(mutate.at("response").at("auditAnnotations").at("decision"), "allow");  // the gate is no fix
    json::value validate = json::parse(post(Endpoint::validate, gpu_pod()).body);
    EXPECT_TRUE(patch_of(validate).empty());
    EXPECT_FALSE(validate.at("response").at("auditAnnotations").as_object().contains("gate"));
    // A pod without GPUs: untouched.
    const std::string cpu_pod = review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}})");
    EXPECT_TRUE(patch_of(json::parse(post(Endpoint::mutate, cpu_pod).body)).empty());
}

TEST_F(AdmissionGateTest, AContainerOnTheGatesVolumeIsDeniedAtValidateAndWarnedAtMutate) {
    // A user init container that mounts launchguard-gate, which the pod
    // leaves to the webhook to define: it would rewrite the gate.
    const std::string hostile = review(
        R"({"uid":"u","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{)"
        R"("initContainers":[{"name":"evil","image":"busybox","command":["sh","-c","cp /bin/true /launchguard/launchguard-gate"],)"
        R"("volumeMounts":[{"name":"launchguard-gate","mountPath":"/launchguard"}]}],)"
        R"("containers":[{"name":"c","image":"i","command":["python","t.py"],"resources":{"limits":{"nvidia.com/gpu":1}}}]}}})");
    json::value mutate = json::parse(post(Endpoint::mutate, hostile).body);
    EXPECT_EQ(mutate.at("response").at("allowed"), true);
    const std::string patch = json::serialize(patch_of(mutate));
    // The gate's own volume is renamed: the user's mount cannot be it.
    EXPECT_NE(patch.find(R"({"name":"launchguard-gate-2","emptyDir")"), std::string::npos) << patch;
    EXPECT_EQ(patch.find(R"("name":"launchguard-gate",)"), std::string::npos) << patch;
    const auto warnings = warnings_of(mutate);
    ASSERT_FALSE(warnings.empty());
    EXPECT_EQ(
        warnings[0].rfind("launchguard gate: spec.initContainers[0] (evil) mounts a volume named launchguard-gate", 0),
        0U)
        << warnings[0];

    json::value validate = json::parse(post(Endpoint::validate, hostile).body);
    EXPECT_EQ(validate.at("response").at("allowed"), false);
    const std::string message = std::string(validate.at("response").at("status").at("message").as_string());
    EXPECT_NE(message.find("k8s.gate-bypass: gets around the launch gate: spec.initContainers[0] (evil)"),
              std::string::npos)
        << message;
    // The same pod with no GPU is not launchguard's business.
    std::string no_gpu = hostile;
    no_gpu.replace(no_gpu.find("nvidia.com/gpu"), 14, "example.com/fo");
    EXPECT_EQ(json::parse(post(Endpoint::validate, no_gpu).body).at("response").at("allowed"), true);
}

TEST_F(AdmissionGateTest, TheOptOutIsWarnedAboutUnlessTheSiteAllowsIt) {
    const std::string opting_out = gpu_pod(R"({"launchguard.dev/gate":"off"})");
    json::value refused = json::parse(post(Endpoint::mutate, opting_out).body);
    EXPECT_EQ(refused.at("response").at("allowed"), true);
    EXPECT_TRUE(adds_gate(patch_of(refused)));
    ASSERT_FALSE(warnings_of(refused).empty());
    EXPECT_EQ(warnings_of(refused)[0],
              "launchguard: launchguard.dev/gate=off is not allowed on this cluster (gate.allowOptOut is false): the "
              "gate is added");
    // Never a denial at /validate, which does not add the gate either.
    EXPECT_EQ(json::parse(post(Endpoint::validate, opting_out).body).at("response").at("allowed"), true);

    config.gate.allow_opt_out = true;
    json::value honoured = json::parse(post(Endpoint::mutate, opting_out).body);
    EXPECT_FALSE(adds_gate(patch_of(honoured)));
    for (const auto& warning : warnings_of(honoured))
        EXPECT_EQ(warning.find("launchguard.dev/gate"), std::string::npos);
    EXPECT_EQ(honoured.at("response").at("auditAnnotations").at("gate"), "opted out (launchguard.dev/gate=off)");
}

TEST_F(AdmissionGateTest, ADisabledGateAddsNothing) {
    config.gate.enabled = false;
    json::value mutate = json::parse(post(Endpoint::mutate, gpu_pod()).body);
    EXPECT_FALSE(adds_gate(patch_of(mutate)));
    EXPECT_FALSE(mutate.at("response").at("auditAnnotations").as_object().contains("gate"));
}

TEST_F(AdmissionGateTest, TheCacheKeepsAnOptedOutPodApartFromOneThatIsNot) {
    config.gate.allow_opt_out = true;
    ReviewCache cache(8, 1U << 20);
    const json::value plain = json::parse(gpu_pod());
    const json::value opted = json::parse(gpu_pod(R"({"launchguard.dev/gate":"off"})"));
    const Ruling with_gate = decide(Endpoint::mutate, decode_review(plain).value(), config, &cache, 100);
    const Ruling without = decide(Endpoint::mutate, decode_review(opted).value(), config, &cache, 100);
    EXPECT_EQ(without.cache_hit, std::optional<bool>(false));
    EXPECT_NE(with_gate.verdict->members, without.verdict->members);
    EXPECT_EQ(decide(Endpoint::mutate, decode_review(plain).value(), config, &cache, 100).cache_hit,
              std::optional<bool>(true));
}

TEST(WebhookMetrics, RendersPrometheusTextWithAHistogram) {
    Metrics metrics;
    metrics.request("/validate", 200, std::chrono::microseconds(700));
    metrics.request("/validate", 200, std::chrono::milliseconds(30));
    metrics.decision("/validate", "block");
    metrics.finding("topo.required", "block");
    metrics.certificate_reload(true);
    const std::string text = metrics.render();
    EXPECT_NE(text.find("launchguard_webhook_requests_total{endpoint=\"/validate\",code=\"200\"} 2\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_request_duration_seconds_bucket{endpoint=\"/validate\",le=\"0.001\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_request_duration_seconds_bucket{endpoint=\"/validate\",le=\"0.05\"} 2\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_request_duration_seconds_count{endpoint=\"/validate\"} 2\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_findings_total{rule=\"topo.required\",action=\"block\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_webhook_certificate_reloads_total{result=\"ok\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace launchguard::webhook
