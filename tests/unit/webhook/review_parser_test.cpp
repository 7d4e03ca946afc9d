// parse_admission_review must build exactly what boost::json::parse builds,
// less request.oldObject and request.object.metadata.managedFields, and
// fail wherever boost::json::parse fails.
#include "review_parser.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

namespace launchguard::webhook {
namespace {
namespace json = boost::json;

json::value skipping_parse(const std::string& text, std::error_code& ec) {
    json::parse_options options;
    options.max_depth = 256;
    return parse_admission_review(text, ec, {}, options);
}

json::value reference_parse(const std::string& text, std::error_code& ec) {
    json::parse_options options;
    options.max_depth = 256;
    return json::parse(text, ec, {}, options);
}

TEST(ReviewParser, LeavesOutManagedFieldsAndOldObjectOnly) {
    const std::string text = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
        "uid":"u","oldObject":{"metadata":{"managedFields":[1]},"spec":{"a":[1,2,{"b":null}]}},
        "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"kubectl",
        "fieldsV1":{"f:spec":{".":{}}}}],"labels":{"managedFields":"kept: only metadata's own is left out"}},
        "spec":{"managedFields":{"kept":true},"oldObject":"kept too",
        "containers":[{"name":"c","env":[{"name":"X","value":"1"}],"args":[-1,2.5,18446744073709551615,true,false,null]}]}},
        "dryRun":false}})";
    std::error_code ec;
    json::value skipped = skipping_parse(text, ec);
    ASSERT_FALSE(ec) << ec.message();
    json::value expected = reference_parse(text, ec);
    ASSERT_FALSE(ec);
    expected.at("request").as_object().erase("oldObject");
    expected.at("request").at("object").at("metadata").as_object().erase("managedFields");
    EXPECT_EQ(skipped, expected) << json::serialize(skipped);
}

TEST(ReviewParser, ScalarsInSkippedPlacesAreLeftOutToo) {
    std::error_code ec;
    json::value v = skipping_parse(
        R"({"request":{"oldObject":null,"object":{"metadata":{"managedFields":"x","name":"n"}},"uid":"u"}})", ec);
    ASSERT_FALSE(ec);
    EXPECT_EQ(v, json::parse(R"({"request":{"object":{"metadata":{"name":"n"}},"uid":"u"}})"));
}

TEST(ReviewParser, AgreesWithBoostJsonOnEveryDocument) {
    // Valid documents that have nothing to skip come out identical; invalid
    // ones (including inside a skipped subtree) fail as they do for
    // boost::json::parse.
    const std::vector<std::string> documents = {
        "{}", "[]", "null", "1", "\"s\"", "[1,[2,[3]]]", R"({"a":{"b":{"c":{}}}})",
        R"({"request":{"uid":"u","object":{"metadata":{"name":"a\u00e9\"\\"}}}})",
        std::string(R"({"k":")") + std::string(5000, 'x') + "\"}",
        "", "{", "[1,]", R"({"request":{"oldObject":{"a":}}})", R"({"request":{"object":{"metadata":{"managedFields":[}}}})",
        "{} x", "{\"a\":1}{}", "[1 2]", "\"\\x\"", "01", "[1e999999]", "{\"a\":1,\"a\":2}",
        std::string(300, '[') + std::string(300, ']'),
    };
    for (const auto& text : documents) {
        std::error_code skipping_error;
        std::error_code reference_error;
        json::value skipped = skipping_parse(text, skipping_error);
        json::value reference = reference_parse(text, reference_error);
        EXPECT_EQ(bool(skipping_error), bool(reference_error)) << text.substr(0, 80);
        if (!reference_error) {
            EXPECT_EQ(skipped, reference) << text.substr(0, 80);
        }
    }
}

}  // namespace
}  // namespace launchguard::webhook
