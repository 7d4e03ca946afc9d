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
        "{}",
        "[]",
        "null",
        "1",
        "\"s\"",
        "[1,[2,[3]]]",
        R"({"a":{"b":{"c":{}}}})",
        R"({"request":{"uid":"u","object":{"metadata":{"name":"a\u00e9\"\\"}}}})",
        std::string(R"({"k":")") + std::string(5000, 'x') + "\"}",
        "",
        "{",
        "[1,]",
        R"({"request":{"oldObject":{"a":}}})",
        R"({"request":{"object":{"metadata":{"managedFields":[}}}})",
        "{} x",
        "{\"a\":1}{}",
        "[1 2]",
        "\"\\x\"",
        "01",
        "[1e999999]",
        "{\"a\":1,\"a\":2}",
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

// The left-out values are passed over by a separate scanner: it must fail
// exactly where basic_parser fails, and leave the rest of the document
// exactly as basic_parser builds it, whatever the left-out value holds.
TEST(ReviewParser, LeftOutValuesAreCheckedAsStrictlyAsTheRest) {
    const std::vector<std::string> values = {
        "null",
        "true",
        "false",
        "0",
        "-0",
        "12",
        "-1.5e+3",
        "1E9",
        "[]",
        "{}",
        " [ 1 , { \"a\" : [ ] } ] ",
        R"([{"manager":"kubectl","fieldsV1":{"f:spec":{"k:{\"name\":\"c\"}":{".":{}}}}}])",
        R"("\"\\\/\b\f\n\r\t\u00e9\u20AC")",
        "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"",
        R"("\ud83d\ude00")",
        std::string("\"") + std::string(40, 'x') + "\\n" + std::string(40, 'y') + "\"",
        std::string(200, '[') + std::string(200, ']'),
        std::string(260, '[') + std::string(260, ']'),
        // each of these is wrong
        "",
        "[",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\"}",
        "{a:1}",
        "[01]",
        "[-]",
        "[1.]",
        "[1e]",
        "[.5]",
        "tru",
        "nul",
        "\"unterminated",
        "\"\x01\"",
        "\"\\x\"",
        "\"\\u12G4\"",
        "\"\\ud800\"",
        "\"\xC0\xAF\"",
        "\"\xED\xA0\x80\"",
        "\"\xF4\x90\x80\x80\"",
        "\"\xE2\x82\"",
        "\"\x80\"",
        "[1 2]",
        "[}",
        "{]",
        "{\"a\":1 \"b\":2}",
    };
    for (const auto& value : values) {
        for (const std::string& text : {
                 R"({"request":{"uid":"u","object":{"metadata":{"name":"n","managedFields":)" + value +
                     R"(,"labels":{"a":"b"}},"spec":{}}}})",
                 R"({"request":{"oldObject" :  )" + value + R"( ,"uid":"u","object":{"metadata":{"managedFields":)" +
                     value + "}}}}",
                 R"({"request":{"uid":"u","object":{"metadata":{"managedFields":)" + value,
             }) {
            std::error_code skipping_error;
            std::error_code reference_error;
            json::value skipped = skipping_parse(text, skipping_error);
            json::value reference = reference_parse(text, reference_error);
            ASSERT_EQ(bool(skipping_error), bool(reference_error)) << text.substr(0, 120);
            if (reference_error) {
                EXPECT_EQ(skipping_error, reference_error) << text.substr(0, 120);
                continue;
            }
            json::object& request = reference.at("request").as_object();
            request.erase("oldObject");
            request.at("object").at("metadata").as_object().erase("managedFields");
            EXPECT_EQ(skipped, reference) << text.substr(0, 120);
        }
    }
}

// A key named like a left-out one elsewhere (another place, inside a string)
// is kept; an escaped spelling of one in its place is still left out.
TEST(ReviewParser, OnlyTheKeysInTheirPlacesAreLeftOut) {
    const std::string text =
        R"({"request":{"uid":"u","note":"say \"managedFields\": [1] and \"oldObject\"","object":{"metadata":{)"
        R"("labels":{"managedFields":"x","oldObject":"y"},"managed\u0046ields":[{"a":1}],"name":"n"},)"
        R"("spec":{"managedFields":{"kept":true}}},"old\u004fbject":{"b":2}}})";
    std::error_code ec;
    json::value skipped = skipping_parse(text, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(skipped,
              json::parse(R"({"request":{"uid":"u","note":"say \"managedFields\": [1] and \"oldObject\"",)"
                          R"("object":{"metadata":{"labels":{"managedFields":"x","oldObject":"y"},"name":"n"},)"
                          R"("spec":{"managedFields":{"kept":true}}}}})"))
        << json::serialize(skipped);
}

}  // namespace
}  // namespace launchguard::webhook
