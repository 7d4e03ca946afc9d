#!/usr/bin/env bash
# deb_test.sh — the Debian packages, built by cpack and installed on this machine.
# Usage: deb_test.sh BUILD_DIR PYXIS_STANDIN_SO   (root; ctest -L deb)
#
# Builds launchguard, launchguard-slurm and launchguard-webhook with
# `cpack -G DEB` from BUILD_DIR, checks their control fields (the Slurm
# release the plugins were built for, conffiles), installs them with
# `dpkg -i`, runs what they installed (the CLI, the profiles, the enroot
# hook script, the webhook with its /etc/default settings, the systemd unit
# through systemd-analyze), runs tests/integration/slurm/plugin_test.sh
# against the installed plugins and CLI, then `dpkg -r` (only the conffiles
# may stay) and `dpkg -P` (nothing may stay).
#
# This changes the machine: it refuses to start when any of the three
# packages is installed already, and purges them on exit, also on failure.
# Two checkouts running it at once take turns (flock). Never skips.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
src=$(cd "$here/../../.." && pwd -P)
build=${1:-}
standin=${2:-}
packages=(launchguard launchguard-slurm launchguard-webhook)
fails=0
passes=0

pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
fatal() { echo "FAIL: $*"; echo "=== deb: $passes passed, $((fails + 1)) failed (aborted) ==="; exit 1; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
status_of() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null; }

[ "$(id -u)" -eq 0 ] || fatal "must run as root (uid $(id -u)): dpkg -i needs it"
[ -f "$build/CPackConfig.cmake" ] || fatal "'$build' is not a configured build dir (no CPackConfig.cmake)"
[ -f "$standin" ] || fatal "test plugin '$standin' not found (build target spank_pyxis_standin)"
for tool in cpack dpkg-deb dpkg-shlibdeps systemd-analyze openssl curl flock; do
  command -v "$tool" >/dev/null || fatal "$tool not found (scripts/install-deps.sh installs it)"
done

exec 9>/run/lock/launchguard-deb-test.lock
flock 9
for p in "${packages[@]}"; do
  case "$(status_of "$p")" in
    "" | "unknown ok not-installed") ;;
    *) fatal "$p is installed ($(status_of "$p")): this test installs and purges it; dpkg -P ${packages[*]} first" ;;
  esac
done
[ ! -e /usr/local/bin/launchguard ] ||
  fatal "/usr/local/bin/launchguard exists: the enroot hook would run it instead of the package's /usr/bin/launchguard"

work=$(mktemp -d /tmp/lgdeb.XXXXXX) || fatal "mktemp failed"
chmod 0755 "$work"
webhook_pid=""
cleanup() {
  [ -z "$webhook_pid" ] || kill "$webhook_pid" 2>/dev/null
  dpkg -P "${packages[@]}" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build ------------------------------------------------------------------------
out="$work/packages"
started=$SECONDS
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$work/cpack.log" 2>&1 ||
  { sed 's/^/    | /' "$work/cpack.log"; fatal "cpack -G DEB failed"; }
echo "deb: cpack took $((SECONDS - started)) s"
declare -A deb
for p in "${packages[@]}"; do
  deb[$p]=$(ls "$out/${p}_"*.deb 2>/dev/null | head -1)
  [ -n "${deb[$p]}" ] || fatal "cpack made no package $p (made: $(cd "$out" && ls -- *.deb 2>/dev/null | tr '\n' ' '))"
  echo "deb: $(basename "${deb[$p]}") $(du -k "${deb[$p]}" | cut -f1) KiB"
done

# --- control fields -------------------------------------------------------------
field() { dpkg-deb --field "${deb[$1]}" "$2"; }
# The release of the Slurm installed here (whose headers the plugins were built
# with), read independently of the build: 22.05.8-4+deb12u3 -> 22.05, next 22.06.
IFS=. read -r slurm_major slurm_minor _ <<<"$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)"
release="$slurm_major.$slurm_minor"
next=$(printf '%s.%02d' "$slurm_major" $((10#$slurm_minor + 1)))
depends=$(field launchguard-slurm Depends)
check "launchguard-slurm depends on Slurm $release only: $depends" \
  grep -qF "slurm-wlm-basic-plugins (>= $release), slurm-wlm-basic-plugins (<< $next)" <<<"$depends"
check "launchguard-webhook depends on the libraries it links (libssl3): $(field launchguard-webhook Depends)" \
  grep -q "libssl3" <<<"$(field launchguard-webhook Depends)"
conffiles_of() { dpkg-deb --ctrl-tarfile "${deb[$1]}" | tar -xOf - ./conffiles 2>/dev/null; }
check "launchguard-slurm's plugstack snippet is a conffile" \
  test "$(conffiles_of launchguard-slurm)" = /etc/slurm/plugstack.conf.d/zz-launchguard.conf
check "launchguard-webhook's /etc/default file is a conffile" \
  test "$(conffiles_of launchguard-webhook)" = /etc/default/launchguard-webhook
check "launchguard has no conffiles" test -z "$(conffiles_of launchguard)"

# --- install and run --------------------------------------------------------------
dpkg -i "${deb[@]}" >"$work/dpkg-i.log" 2>&1 || { sed 's/^/    | /' "$work/dpkg-i.log"; fatal "dpkg -i failed"; }
for p in "${packages[@]}"; do
  check "$p installed" test "$(status_of "$p")" = "install ok installed"
done

version=$(field launchguard Version)
check "/usr/bin/launchguard --version is ${version%-*}" test "$(/usr/bin/launchguard --version)" = "launchguard ${version%-*}"
check "/usr/bin/launchguard-webhook --version" test "$(/usr/bin/launchguard-webhook --version)" = "launchguard-webhook ${version%-*}"
# The Kubernetes launch gate ships beside the CLI, static (it runs inside any container image).
check "/usr/bin/launchguard-gate is static and runs" sh -c \
  'file -b /usr/bin/launchguard-gate | grep -q "statically linked" && /usr/bin/launchguard-gate run --mode off -- /bin/true'
# slurm.conf's HealthCheckProgram takes no arguments: the link's name means node-check --slurm.
check "/usr/bin/launchguard-node-check links to launchguard" test "$(readlink /usr/bin/launchguard-node-check)" = launchguard
check "the NPD plugin config is installed" test -s /usr/share/launchguard/npd/launchguard-node-check.json
profiles=(/usr/share/launchguard/profiles/*.yaml)
bad_profiles=()
for f in "${profiles[@]}"; do /usr/bin/launchguard profile validate "$f" >/dev/null 2>&1 || bad_profiles+=("$f"); done
check "the ${#profiles[@]} installed profiles validate (bad: ${bad_profiles[*]:-none})" \
  test "${#profiles[@]}" -ge 5 -a "${#bad_profiles[@]}" -eq 0
check "the docs are installed" test -f /usr/share/doc/launchguard/slurm.md -a -f /usr/share/doc/launchguard/README.md

# The hooks.d script as enroot runs it, with no LAUNCHGUARD_BIN: it must find /usr/bin/launchguard.
hook_dir="$work/enroot"; mkdir -p "$hook_dir/rootfs" "$hook_dir/sysconf"
printf 'PATH=/usr/bin:/bin\n' >"$hook_dir/environ"; : >"$hook_dir/mounts"
printf 'LAUNCHGUARD_MODE=warn\n' >"$hook_dir/sysconf/launchguard.env"
env -i PATH=/usr/bin:/bin ENROOT_ROOTFS="$hook_dir/rootfs" ENROOT_ENVIRON="$hook_dir/environ" \
  ENROOT_MOUNTS="$hook_dir/mounts" ENROOT_SYSCONF_PATH="$hook_dir/sysconf" \
  /usr/share/launchguard/enroot/90-launchguard.sh >"$hook_dir/out" 2>&1
hook_rc=$?
# Exit 0 in warn mode: a hook that found no launchguard exits 127.
check "the installed enroot hook script runs /usr/bin/launchguard (exit $hook_rc)" test "$hook_rc" -eq 0
[ "$hook_rc" -eq 0 ] || sed 's/^/    | /' "$hook_dir/out"

# The webhook with the settings the systemd unit passes it, on a free port of loopback.
unit=/usr/lib/systemd/system/launchguard-webhook.service
check "systemd-analyze verify accepts the installed unit" systemd-analyze verify "$unit"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.crt" >/dev/null 2>&1
args=$(. /etc/default/launchguard-webhook && echo "$LAUNCHGUARD_WEBHOOK_ARGS")
# shellcheck disable=SC2086  # word splitting is what systemd does with $LAUNCHGUARD_WEBHOOK_ARGS
/usr/bin/launchguard-webhook --tls-cert="$work/tls.crt" --tls-key="$work/tls.key" \
  ${args//--listen=0.0.0.0:8443/--listen=127.0.0.1:0} --port-file "$work/port" >"$work/webhook.log" 2>&1 &
webhook_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
health=$(curl -sS --max-time 5 --cacert "$work/tls.crt" "https://127.0.0.1:$(cat "$work/port" 2>/dev/null)/healthz" 2>&1)
check "the installed webhook with /etc/default/launchguard-webhook's flags answers /healthz ($health)" test "$health" = ok
kill -TERM "$webhook_pid"; wait "$webhook_pid"; webhook_rc=$?; webhook_pid=""
check "it exits 0 on SIGTERM (exit $webhook_rc)" test "$webhook_rc" -eq 0

# --- the Slurm integration test against what dpkg installed ----------------------------------------
task_so=$(dpkg -L launchguard-slurm | grep '/spank_launchguard\.so$')
prolog_so=$(dpkg -L launchguard-slurm | grep '/spank_launchguard_prolog\.so$')
check "the plugins are in Slurm's PluginDir ($(dirname "$task_so"), owned by $(dpkg-query -S "$(dirname "$task_so")" 2>/dev/null | cut -d: -f1))" \
  sh -c "dpkg-query -S '$(dirname "$task_so")' | grep -q slurm-wlm-basic-plugins"
# The snippet's commented plugin lines, once uncommented, must name what the package installed.
snippet_plugins=$(sed -n 's/^#required[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' /etc/slurm/plugstack.conf.d/zz-launchguard.conf)
check "the plugstack snippet names the installed plugins ($(echo $snippet_plugins))" \
  test "$(echo $snippet_plugins)" = "$(basename "$task_so") $(basename "$prolog_so")"
started=$SECONDS
"$src/tests/integration/slurm/plugin_test.sh" "$task_so" "$standin" /usr/bin/launchguard "$prolog_so" \
  >"$work/plugin_test.log" 2>&1
plugin_rc=$?
grep -E '^=== ' "$work/plugin_test.log" | sed 's/^/    /'
check "plugin_test.sh passes against the installed plugins and CLI ($((SECONDS - started)) s)" test "$plugin_rc" -eq 0
[ "$plugin_rc" -eq 0 ] || grep -E '^FAIL' "$work/plugin_test.log" | head -20 | sed 's/^/    | /'

# --- remove: only the conffiles stay; purge: nothing stays -----------------------------------------
for p in "${packages[@]}"; do dpkg-deb --fsys-tarfile "${deb[$p]}" | tar -tf - | sed 's|^\./|/|; s|/$||' | grep -v '^$'; done |
  sort -u >"$work/shipped"
conffiles=$(for p in "${packages[@]}"; do conffiles_of "$p"; done | sort)
dpkg -r "${packages[@]}" >"$work/dpkg-r.log" 2>&1 || { sed 's/^/    | /' "$work/dpkg-r.log"; fatal "dpkg -r failed"; }
# What is left of what the packages shipped, less the directories other packages
# own (/usr/bin, /etc/slurm, ...) and those that hold a conffile.
left_after() {
  while read -r path; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    if [ -d "$path" ] && ! [ -L "$path" ]; then
      dpkg-query -S "$path" >/dev/null 2>&1 && continue
      grep -q "^$path/" <<<"$conffiles" && [ "$1" = remove ] && continue
    fi
    echo "$path"
  done <"$work/shipped"
}
left=$(left_after remove | sort)
check "dpkg -r leaves exactly the conffiles (left: $(echo $left))" test "$left" = "$conffiles"
check "launchguard-slurm and launchguard-webhook keep their configuration (config-files)" \
  test "$(status_of launchguard-slurm) $(status_of launchguard-webhook)" = "deinstall ok config-files deinstall ok config-files"
dpkg -P "${packages[@]}" >"$work/dpkg-P.log" 2>&1 || { sed 's/^/    | /' "$work/dpkg-P.log"; fatal "dpkg -P failed"; }
left=$(left_after purge)
check "dpkg -P leaves nothing (left: $(echo $left))" test -z "$left"
for p in "${packages[@]}"; do
  check "$p is gone from dpkg's database" sh -c "! dpkg-query -W '$p' >/dev/null 2>&1 || [ \"\$(dpkg-query -W -f='\${Status}' '$p')\" = 'unknown ok not-installed' ]"
done

echo "=== deb: $passes passed, $fails failed ==="
[ "$fails" -eq 0 ]
