// launchguard-webhook: the Kubernetes admission front end. Parses flags,
// loads the configuration and the certificate, and serves until SIGTERM.
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <ctime>
#include <iostream>

#include "server.h"

namespace {

using namespace launchguard;
using namespace launchguard::webhook;

constexpr int kExitBadInput = 2;

int fail(const std::string& message) {
    std::cerr << "launchguard-webhook: " << message << "\n";
    return kExitBadInput;
}

LogFunction make_logger(const std::string& format) {
    auto logger = spdlog::stderr_logger_mt("launchguard-webhook");
    if (format == "json") {
        logger->set_pattern("%v");
        return [logger](const std::string& level, const std::string& message,
                        const std::map<std::string, std::string>& fields) {
            boost::json::object line;
            std::time_t now = std::time(nullptr);
            std::tm utc{};
            gmtime_r(&now, &utc);
            char stamp[32];
            std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &utc);
            line["time"] = stamp;
            line["level"] = level;
            line["msg"] = message;
            for (const auto& [key, value] : fields) line[key] = value;
            logger->info(boost::json::serialize(line));
        };
    }
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
    return [logger](const std::string& level, const std::string& message,
                    const std::map<std::string, std::string>& fields) {
        std::string text = message;
        for (const auto& [key, value] : fields) {
            // key=value with values quoted when they hold spaces, as logfmt does.
            const bool quote = value.empty() || value.find_first_of(" \"=") != std::string::npos;
            text += " " + key + "=" + (quote ? boost::json::serialize(boost::json::string(value)) : value);
        }
        if (level == "error") logger->error(text);
        else if (level == "warn") logger->warn(text);
        else logger->info(text);
    };
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
    app.add_option("--log-format", log_format, "json or text")->check(CLI::IsMember({"json", "text"}))->capture_default_str();
    app.add_option("--threads", options.threads, "I/O threads")->check(CLI::Range(1, 64))->capture_default_str();
    app.add_option("--max-body-mib", body_limit_mib, "largest AdmissionReview accepted (413 above)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    app.add_option("--review-cache", options.review_cache_entries,
                   "verdicts kept for objects admitted again, e.g. the pods of one Job (0: review every request)")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
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

    LogFunction log = make_logger(log_format);
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
    log("info", "serving", {{"address", options.address}, {"port", std::to_string(*port)},
                            {"profile", config->default_profile},
                            {"mode", std::string(to_string(config->modes.site_mode))},
                            {"profiles", std::to_string(config->profiles.size())}});
    server.run();
    log("info", "stopped", {});
    return 0;
}
