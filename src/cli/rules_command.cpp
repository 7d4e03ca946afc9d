// `launchguard rules` and `launchguard explain RULE`.
#include <boost/json.hpp>
#include <iostream>

#include "cli/command.h"
#include "report/json_report.h"
#include "report/rule_catalog.h"

namespace launchguard::cli {

void add_rules_command(CLI::App& app, CommandRunner& runner) {
    auto format = std::make_shared<std::string>("text");
    CLI::App* cmd = app.add_subcommand("rules", "List every rule with its default action and contexts");
    cmd->add_option("--format", *format, "text, json or markdown")
        ->check(CLI::IsMember({"text", "json", "markdown"}))
        ->capture_default_str();
    cmd->callback([&runner, format] {
        runner = [format] {
            if (*format == "json") {
                boost::json::array rules;
                for (const Rule* r : all_rules()) rules.push_back(rule_to_json(r->info()));
                std::cout << pretty_json(rules);
            } else if (*format == "markdown") {
                std::cout << render_rules_markdown();
            } else {
                std::cout << render_rule_table(stdout_is_terminal());
            }
            return kExitAllow;
        };
    });
}

void add_explain_command(CLI::App& app, CommandRunner& runner) {
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("explain", "Explain one rule: what, why, evidence, fix");
    cmd->add_option("rule", *id, "Rule id, e.g. topo.file-missing")->required();
    cmd->callback([&runner, id] {
        runner = [id] {
            const Rule* rule = find_rule(*id);
            if (rule == nullptr) return bad_input("unknown rule '" + *id + "' (see `launchguard rules`)");
            std::cout << render_rule_explanation(rule->info());
            return kExitAllow;
        };
    });
}

}  // namespace launchguard::cli
