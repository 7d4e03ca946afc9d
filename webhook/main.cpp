// launchguard-webhook: the Kubernetes admission front end. Parses flags,
// loads the configuration and the certificate, and serves until SIGTERM.
#include <spdlog/sinks/stdout_sinks.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "log.h"
#include "server.h"

namespace {

using namespace launchguard;
using namespace launchguard::webhook;

constexpr int kExitBadInput = 2;

int fail(const std::string& message) {
    std::cerr << "launchguard-webhook: " << message << "\n";
    return kExitBadInput;
}

// A timeout flag in whole seconds, as the chart's values give them.
void add_timeout(CLI::App& app, const std::string& flag, std::chrono::milliseconds& timeout, const std::string& what) {
    app.add_option_function<int>(
           flag, [&timeout](int seconds) { timeout = std::chrono::seconds(seconds); }, what + " (seconds)")
        ->check(CLI::Range(1, 3600))
        ->default_str(std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"launchguard-webhook: Kubernetes admission webhook for GPU launches (AdmissionReview v1 over TLS)",
                 "launchguard-webhook"};
    app.set_version_flag("--version", "launchguard-webhook " LAUNCHGUARD_VERSION);
    std::string listen = "0.0.0.0:8443";
    std::string cert_file;
    std::string key_file;
    std::string profile = "default";
    std::string mode_text = "enforce";
    std::string config_file;
    std::string log_format = "text";
    std::string port_file;
    ServerOptions options;
    std::size_t body_limit_mib = 8;
    app.add_option("--listen", listen, "ADDR:PORT to serve HTTPS on (port 0: any free port)")->capture_default_str();
    app.add_option("--tls-cert", cert_file, "PEM certificate chain (reloaded when it changes)")->required();
    app.add_option("--tls-key", key_file, "PEM private key (reloaded when it changes)")->required();
    app.add_option("--profile", profile, "embedded profile name or YAML file, when there is no --config")
        ->capture_default_str();
    app.add_option("--mode", mode_text, "enforce, patch or warn, when there is no --config")
        ->check(CLI::IsMember({"enforce", "patch", "warn"}))
        ->capture_default_str();
    app.add_option("--config", config_file, "site configuration: profiles, selection, allowed user modes");
    app.add_option("--log-format", log_format, "json or text")
        ->check(CLI::IsMember({"json", "text"}))
        ->capture_default_str();
    app.add_option("--threads", options.threads, "I/O threads")->check(CLI::Range(1, 64))->capture_default_str();
    app.add_option("--max-body-mib", body_limit_mib, "largest AdmissionReview accepted (413 above)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    app.add_option("--review-cache", options.review_cache_entries,
                   "verdicts kept for objects admitted again, e.g. the pods of one Job (0: review every request)")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    add_timeout(app, "--handshake-timeout", options.handshake_timeout, "TLS handshake of a new connection");
    add_timeout(app, "--request-timeout", options.request_timeout,
                "one request, from its first byte to the end of its body, and its answer's write");
    add_timeout(app, "--idle-timeout", options.idle_timeout, "a keep-alive connection waiting for its next request");
    add_timeout(app, "--drain-timeout", options.drain_timeout,
                "requests in flight after SIGTERM before the server stops anyway");
    app.add_option("--port-file", port_file, "write the bound port here once listening (tests, --listen :0)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return kExitBadInput;
    }
    if (!config_file.empty() && (app.count("--profile") > 0 || app.count("--mode") > 0)) {
        return fail("--config names the profiles and the mode: drop --profile and --mode");
    }
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) return fail("--listen " + listen + ": expected ADDR:PORT");
    options.address = listen.substr(0, colon);
    if (options.address.empty()) options.address = "0.0.0.0";
    try {
        const int port = std::stoi(listen.substr(colon + 1));
        if (port < 0 || port > 65535) throw std::out_of_range("port");
        options.port = static_cast<unsigned short>(port);
    } catch (const std::exception&) {
        return fail("--listen " + listen + ": the port must be 0-65535");
    }
    options.body_limit = body_limit_mib << 20;

    auto config = config_file.empty() ? default_webhook_config(profile, *parse_mode(mode_text))
                                      : load_webhook_config(config_file);
    if (!config) return fail(config.error().to_string());
    auto certificates = CertificateStore::open(cert_file, key_file);
    if (!certificates) return fail(certificates.error().to_string());

    Log log(log_format == "json" ? LogFormat::json : LogFormat::text,
            std::make_shared<spdlog::sinks::stderr_sink_mt>());
    Metrics metrics;
    Server server(options, *config, **certificates, metrics, log);
    auto port = server.listen();
    if (!port) return fail(port.error().to_string());
    if (!port_file.empty()) {
        if (FILE* f = std::fopen(port_file.c_str(), "w")) {
            std::fprintf(f, "%u\n", *port);
            std::fclose(f);
        } else {
            return fail("--port-file " + port_file + ": cannot write");
        }
    }
    log.write("info", "serving",
              {{"address", options.address},
               {"port", std::to_string(*port)},
               {"profile", config->default_profile},
               {"mode", std::string(to_string(config->modes.site_mode))},
               {"profiles", std::to_string(config->profiles.size())},
               {"gate", config->gate.enabled ? config->gate.image : std::string("off")}});
    server.run();
    log.write("info", "stopped", {});
    log.flush();  // every line of the drain is out before the exit status
    return 0;
}
