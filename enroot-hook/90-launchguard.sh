#!/usr/bin/env bash
# launchguard enroot hook: install as an executable file in /etc/enroot/hooks.d
# (enroot runs every executable *.sh there, in name order, before the
# container switches root; a non-zero exit aborts the start).
#
# It checks that the host's NCCL topology file, /etc/nccl.conf values and
# NCCL_* variables will be visible inside the container, appends the
# environment and mount lines that fix it to $ENROOT_ENVIRON and
# $ENROOT_MOUNTS, and in enforce mode stops the start for what it cannot fix.
#
# Site configuration (optional), beside hooks.d: $ENROOT_SYSCONF_PATH/launchguard.env
#   LAUNCHGUARD_PROFILE=azure-ndv5        # embedded name or a YAML path
#   LAUNCHGUARD_MODE=patch                # enforce | patch | warn | off
#   LAUNCHGUARD_BIN=/opt/launchguard/bin/launchguard   # default: /usr/local/bin, else /usr/bin
# The job's own environment cannot change these: hooks see the user's
# variables, so values are taken from the site file only.
set -euo pipefail

unset LAUNCHGUARD_PROFILE LAUNCHGUARD_MODE LAUNCHGUARD_BIN
config="${ENROOT_SYSCONF_PATH:-/etc/enroot}/launchguard.env"
if [ -r "$config" ]; then
    # shellcheck disable=SC1090
    . "$config"
fi
# A build installed by hand (/usr/local) wins over the Debian package's
# (/usr/bin); the job's PATH is never searched, for the reason above.
if [ -z "${LAUNCHGUARD_BIN:-}" ]; then
    LAUNCHGUARD_BIN=/usr/bin/launchguard
    if [ -x /usr/local/bin/launchguard ]; then LAUNCHGUARD_BIN=/usr/local/bin/launchguard; fi
fi
exec "$LAUNCHGUARD_BIN" enroot-hook \
    --profile "${LAUNCHGUARD_PROFILE:-default}" --mode "${LAUNCHGUARD_MODE:-patch}"
