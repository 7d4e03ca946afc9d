// The two admission endpoints: /mutate patches what it can fully fix,
// /validate denies what is left.
#pragma once

namespace launchguard::webhook {

enum class Endpoint { mutate, validate };

}  // namespace launchguard::webhook
