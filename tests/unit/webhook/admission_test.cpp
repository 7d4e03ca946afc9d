// The AdmissionReview envelope: what the API server requires of every
// answer, whatever the workload. The workload judgements themselves are
// tested in tests/unit/kubernetes and end to end in tests/integration/webhook.
#include "admission.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace launchguard::webhook {
namespace {
namespace json = boost::json;

class AdmissionTest : public ::testing::Test {
protected:
    WebhookConfig config = default_webhook_config("default", Mode::enforce).value();
    Metrics metrics;

    Answer post(Endpoint endpoint, const std::string& body) { return admit(endpoint, body, config, metrics); }
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
