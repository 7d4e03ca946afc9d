// The JSON report: a stable, documented shape (docs/cli.md) that scripts and
// the other front ends consume.
#pragma once

#include <boost/json/value.hpp>
#include <string>

#include "engine/engine.h"

namespace launchguard {

boost::json::value remediation_to_json(const RemediationOp& op);
boost::json::value finding_to_json(const Finding& finding);
boost::json::value report_to_json(const Report& report);
// Pretty-printed with a trailing newline.
std::string render_json(const Report& report);
// For JSON that carries text from the launch or the node: keys and strings
// are made valid UTF-8 (util/text_escape.h, valid_utf8), which
// json::serialize does not do, so no byte there makes the output unreadable.
std::string pretty_json(const boost::json::value& value);

}  // namespace launchguard
