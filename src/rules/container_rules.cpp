#include "rules/families.h"
#include "rules/table_rule.h"

namespace launchguard {

void register_container_rules(std::vector<const Rule*>& /*rules*/) {}

}  // namespace launchguard
