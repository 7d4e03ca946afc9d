#!/usr/bin/env bash
# cluster.sh — a real, throw-away single-node Slurm cluster (munged + slurmctld +
# slurmd) for launchguard's integration tests.  Must run as root.  No systemd.
#
# Usage:
#   cluster.sh start   STATE_DIR PLUGSTACK_FILE   # fresh cluster, waits until the node is idle
#   cluster.sh stop    STATE_DIR                  # idempotent; also kills left-over steps
#   cluster.sh status  STATE_DIR                  # exit 0 iff all three daemons are alive
#   cluster.sh restart-slurmd STATE_DIR           # needed after changing SLURMD-context hooks
#                                                 # or adding job_prolog/job_epilog hooks
#   cluster.sh reconfigure STATE_DIR              # scontrol reconfigure (slurm.conf edits)
#   cluster.sh node-exec STATE_DIR CMD [ARG]...   # run CMD in slurmd's mount namespace
#   Tests then:  . STATE_DIR/env ; srun ...      (env exports SLURM_CONF etc.)
#
#   LG_SLURMD_OVERLAY="/etc /opt" (at start): slurmd, and so every slurmstepd
#   and task, runs in a private mount namespace where each listed directory is
#   an overlay over the machine's own, writable through node-exec.  Tests give
#   the "node" files the machine lacks (/etc/nccl.conf, /opt/...) without
#   touching the machine; its own /etc and /opt never change.
#
# Everything lives under STATE_DIR: slurm.conf, cgroup.conf, env, munge key+socket,
# state/, spool/, log/, *.pid.  Nothing in /etc is touched; the system munged (if
# any) is not used or disturbed.  Ports: a free pair from 20000-29999 picked by
# pid (override with LG_SLURMCTLD_PORT / LG_SLURMD_PORT); several clusters can
# run side by side in different STATE_DIRs.
#
# What this environment needs (observed: Slurm 22.05.8 / munge 0.5.15, Debian 12,
# root, no systemd, 2 CPUs; see docs/slurm-testing.md for details):
#  * munge: root-run munged needs --force.  We run a private munged with its own
#    key (STATE_DIR/munge/munge.key, root 0600 in a 0700 dir), its own socket
#    (STATE_DIR/munge-run/munge.socket, dir 0755 so a non-root test user can reach
#    it) and point Slurm at it with AuthInfo=socket=... — every Slurm client
#    (srun/sbatch/sinfo), slurmd and slurmstepd honours AuthInfo, so no
#    /run/munge is needed and concurrent clusters do not interfere.
#  * cgroups: NOT used.  ProctrackType=proctrack/linuxproc, TaskPlugin=task/affinity,
#    JobAcctGatherType=jobacct_gather/none; no cgroup plugin is ever loaded, so it
#    works on cgroup v1, hybrid and v2-without-systemd/dbus hosts alike (cgroup
#    plugins stop slurmd on v2 without dbus).  This sandbox has a hybrid layout
#    (v1 controllers + /sys/fs/cgroup/unified); CI's may be pure v2: irrelevant
#    here.  A cgroup.conf (autodetect, IgnoreSystemd) is still written beside
#    slurm.conf only so /etc/slurm/cgroup.conf is never read.
#  * affinity: task/affinity works here (sched_setaffinity is allowed as root):
#    `srun -n2 --cpu-bind=map_cpu:0,1` gives the tasks Cpus_allowed_list 0 and 1.
#  * daemons: started in their normal daemonizing mode (no -D, no -b) with -f
#    STATE_DIR/slurm.conf, stdio redirected to log/*.stdout; slurmctld gets -c -i
#    (clean state, ignore stale state errors); slurmd gets -N $(hostname -s).
#    SLURM_CONF is also exported to the daemons so slurmstepd processes can be
#    identified (and killed on stop) by their environment.
#  * ReturnToService=2 and State=UNKNOWN: the node goes idle on registration; a
#    DOWN/DRAIN node is resumed once by the wait loop.
#  * NodeAddr/SlurmctldHost address 127.0.0.1: no DNS needed.  CPUs=$(nproc) plus
#    Boards/SocketsPerBoard/CoresPerSocket/ThreadsPerCore from `slurmd -C` (CPUs
#    alone makes Slurm assume 1 core per socket and log "Node reconfigured
#    socket/core boundaries").  RealMemory = 90% of MemTotal (above the hardware
#    would make the node INVAL).  If nproc < `slurmd -C` CPUs (cpuset-restricted
#    container) only CPUs= is written and a warning printed.
#  * PID 1 here (and in many containers) does not reap orphans: the daemons'
#    exited parents and killed daemons linger as zombies, and `kill -0` succeeds
#    on a zombie, so liveness checks read /proc/PID/stat and skip state Z.
#  * slurmstepd ignores SIGTERM: stop first scancels (slurmctld alive), then
#    SIGKILLs any slurmstepd of this cluster and all its descendants (tasks),
#    then TERMs slurmd, slurmctld, munged.  srun clients are not ours to kill
#    (and srun ignores the first SIGTERM: use `timeout -k`).
#  * STATE_DIR path <= 64 chars (unix socket paths are limited to 107 bytes).
#  * Batch scripts run from SlurmdSpoolDir (STATE_DIR/spool): STATE_DIR must not be
#    on a noexec mount.  STATE_DIR is made 0755 so a non-root job user can use it.
#  * Harmless log noise: mpi/pmix_v4 "can not load PMIx library".
#  * Timing: start takes 0.3-1.5 s here, stop ~0.2 s (2 s for a crashed run).
set -euo pipefail

PROG=${0##*/}
WAIT_IDLE_S=${LG_SLURM_WAIT_S:-60}
STOP_WAIT_S=${LG_SLURM_STOP_WAIT_S:-15}

die()  { echo "$PROG: ERROR: $*" >&2; exit 1; }
info() { echo "$PROG: $*" >&2; }

usage() {
  sed -n '2,20p' "$0" >&2
  exit 2
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (uid $(id -u))"; }

find_bin() {
  local b
  for b in "$@"; do
    if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return 0; fi
    [ -x "/usr/sbin/$b" ] && { echo "/usr/sbin/$b"; return 0; }
  done
  return 1
}

port_in_use() {
  local p=$1
  if command -v ss >/dev/null 2>&1; then
    ss -Hltn "( sport = :$p )" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
  fi
}

pick_port() { # first free port >= $1 not equal to $2
  local p=$1
  while port_in_use "$p" || [ "$p" = "${2:-}" ]; do p=$((p + 1)); done
  echo "$p"
}

# PIDs of this cluster's daemons: munged/slurmctld/slurmd whose command line
# mentions STATE_DIR/ (for runs whose pid files are gone).  Only builtins in the
# scan loop: this runs on every stop.
daemon_pids() {
  local dir=$1 pid comm cmd
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    { read -r comm <"/proc/$pid/comm"; } 2>/dev/null || continue
    case "$comm" in munged|slurmctld|slurmd) ;; *) continue ;; esac
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    case "$cmd" in *"$dir/"*) pid_alive "$pid" && echo "$pid" ;; esac
  done
}

# PIDs of this cluster's slurmstepd processes (they inherit SLURM_CONF from the
# slurmd we started) followed by all their descendants (the job's tasks).
step_pids() {
  local dir=$1 pid comm stat ppid c
  local -a steps=() all=() queue=()
  local -A kids=()
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
    comm=${stat#*(}; comm=${comm%)*}
    stat=${stat##*) }                # "state ppid ..."
    read -r _ ppid _ <<<"$stat"
    kids[$ppid]+=" $pid"
    case "$comm" in
      slurmstepd)
        case "$stat" in Z*) continue ;; esac
        tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf" && steps+=("$pid") ;;
    esac
  done
  [ "${#steps[@]}" -gt 0 ] || return 0
  queue=("${steps[@]}")
  while [ "${#queue[@]}" -gt 0 ]; do
    pid=${queue[0]}; queue=("${queue[@]:1}")
    all+=("$pid")
    for c in ${kids[$pid]:-}; do queue+=("$c"); done
  done
  printf '%s\n' "${all[@]}"
}

# Alive and not a zombie: PID 1 of a sandbox/container may never reap the
# daemons' exited parents or killed daemons, and kill -0 succeeds on zombies.
pid_alive() {
  local st
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
  { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
  st=${st##*) }
  [ "${st:0:1}" != Z ]
}

pidfile_pid() { if [ -s "$1" ]; then tr -dc '0-9' <"$1"; fi; }

kill_and_wait() { # kill_and_wait TIMEOUT PID...
  local t=$1; shift
  local p i
  local -a left=()
  [ "$#" -gt 0 ] || return 0
  if [ "$t" -eq 0 ]; then
    for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done
    sleep 0.2
    return 0
  fi
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for ((i = 0; i < t * 10; i++)); do
    left=()
    for p in "$@"; do pid_alive "$p" && left+=("$p"); done
    [ "${#left[@]}" -eq 0 ] && return 0
    sleep 0.1
  done
  info "processes ${left[*]} ignored SIGTERM for ${t}s; sending SIGKILL"
  for p in "${left[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  sleep 0.2
}

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd -P); }

dump_logs() {
  local dir=$1 f
  echo "----- $PROG: diagnostics for $dir -----" >&2
  for f in "$dir"/log/munged.log "$dir"/log/slurmctld.log "$dir"/log/slurmd.log "$dir"/log/*.stdout; do
    [ -s "$f" ] || continue
    echo "===== tail -n 40 $f =====" >&2
    tail -n 40 "$f" >&2
  done
  if [ -f "$dir/slurm.conf" ]; then
    echo "===== sinfo / scontrol show node =====" >&2
    SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo -N -l >&2 2>&1 || true
    SLURM_CONF="$dir/slurm.conf" timeout 10 scontrol show node >&2 2>&1 || true
  fi
  echo "----- end diagnostics -----" >&2
}

do_stop() {
  local dir=$1
  [ -d "$dir" ] || { info "stop: $dir does not exist; nothing to do"; return 0; }
  dir=$(cd "$dir" && pwd -P)
  local -a pids=() steps=()
  local p f
  # 1. Cancel jobs so slurmstepds end cleanly (bounded, best effort).
  if [ -f "$dir/slurm.conf" ] && pid_alive "$(pidfile_pid "$dir/slurmctld.pid")"; then
    SLURM_CONF="$dir/slurm.conf" timeout 5 scancel --quiet --full 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      [ -z "$(step_pids "$dir")" ] && break
      sleep 0.1
    done
  fi
  # 2. Left-over steps (slurmstepd ignores SIGTERM) and their tasks: SIGKILL.
  mapfile -t steps < <(step_pids "$dir")
  if [ "${#steps[@]}" -gt 0 ]; then
    info "killing left-over slurmstepd/task pids ${steps[*]}"
    kill_and_wait 0 "${steps[@]}"
  fi
  # 3. Daemons: pid files, plus any of ours without one (crashed run).
  for f in slurmd slurmctld munged; do
    p=$(pidfile_pid "$dir/$f.pid")
    pid_alive "$p" && pids+=("$p")
  done
  while read -r p; do
    [ -n "$p" ] || continue
    case " ${pids[*]} " in *" $p "*) ;; *) pids+=("$p") ;; esac
  done < <(daemon_pids "$dir")
  if [ "${#pids[@]}" -gt 0 ]; then
    info "stopping daemons ${pids[*]}"
    kill_and_wait "$STOP_WAIT_S" "${pids[@]}"
  fi
  rm -f "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid
  # 4. A step forked while slurmd was going down.
  mapfile -t steps < <(step_pids "$dir")
  [ "${#steps[@]}" -eq 0 ] || kill_and_wait 0 "${steps[@]}"
  return 0
}

write_conf() {
  local dir=$1 plugstack=$2 host=$3 cport=$4 dport=$5
  local ncpu mem_kb realmem hw hw_cpus topo=""
  ncpu=$(nproc)
  mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  realmem=$((mem_kb * 9 / 10 / 1024))
  hw=$("$SLURMD" -C 2>/dev/null | head -n1 || true)
  hw_cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
  if [ "$hw_cpus" = "$ncpu" ]; then
    # Real socket/core/thread layout, so socket/core binding matches the host
    # (CPUs alone makes Slurm assume one core per socket).
    topo=$(grep -oE '(Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=[0-9]+' <<<"$hw" | tr '\n' ' ')
  else
    info "WARNING: nproc=$ncpu but slurmd -C reports CPUs=${hw_cpus:-?} (cpuset-restricted?); using CPUs=$ncpu only"
  fi
  cat >"$dir/slurm.conf" <<CONF
# Generated by $PROG for launchguard integration tests.  Do not edit by hand.
ClusterName=lgtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge-run/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
PlugStackConfig=$plugstack
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=30
KillWait=5
Waittime=0
NodeName=$host NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$ncpu ${topo}RealMemory=$realmem State=UNKNOWN
PartitionName=lgtest Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  cat >"$dir/cgroup.conf" <<CONF
# Not used (no cgroup plugins configured); present so /etc/slurm/cgroup.conf is never read.
CgroupPlugin=autodetect
IgnoreSystemd=yes
CONF
  cat >"$dir/env" <<ENV
# Source this file to talk to the test cluster.
export SLURM_CONF=$dir/slurm.conf
export LG_SLURM_STATE_DIR=$dir
export LG_SLURM_NODE=$host
export LG_SLURM_PARTITION=lgtest
export LG_SLURM_PLUGSTACK=$plugstack
export LG_SLURM_LOG_DIR=$dir/log
export LG_SLURMD_LOG=$dir/log/slurmd.log
export LG_SLURMCTLD_LOG=$dir/log/slurmctld.log
export LG_MUNGE_SOCKET=$dir/munge-run/munge.socket
ENV
}

node_state() { SLURM_CONF="$1/slurm.conf" timeout 10 sinfo -h -n "$2" -o %t 2>/dev/null | head -n1 || true; }

# slurmd daemonizes; with STATE_DIR/slurmd.overlay it first enters a private
# mount namespace with the listed directories overlaid (upper layers under
# STATE_DIR/node-overlay survive a restart-slurmd).
launch_slurmd() {
  local dir=$1 host=$2
  if [ ! -s "$dir/slurmd.overlay" ]; then
    "$SLURMD" -f "$dir/slurm.conf" -N "$host" </dev/null
    return
  fi
  local d name mounts=""
  for d in $(cat "$dir/slurmd.overlay"); do
    case "$d" in /*) ;; *) die "LG_SLURMD_OVERLAY: '$d' is not an absolute path" ;; esac
    [ -d "$d" ] || die "LG_SLURMD_OVERLAY: $d is not a directory on this machine"
    name=$(echo "$d" | tr / _)
    mkdir -p "$dir/node-overlay/$name/upper" "$dir/node-overlay/$name/work"
    chmod 0755 "$dir/node-overlay" "$dir/node-overlay/$name" "$dir/node-overlay/$name/upper"
    mounts="$mounts mount -t overlay overlay -o lowerdir=$d,upperdir=$dir/node-overlay/$name/upper,workdir=$dir/node-overlay/$name/work $d &&"
  done
  unshare --mount --propagation private -- sh -c "$mounts exec \"\$0\" \"\$@\"" \
    "$SLURMD" -f "$dir/slurm.conf" -N "$host" </dev/null
}

do_node_exec() {
  local dir p
  dir=$(cd "$1" && pwd -P); shift
  p=$(pidfile_pid "$dir/slurmd.pid")
  pid_alive "$p" || die "slurmd is not running"
  # exec: CMD keeps this process's pid, so that a caller that starts it in
  # the background ($!) can signal it.
  exec nsenter --target "$p" --mount -- "$@"
}

do_start() {
  local dir=$1 plugstack=$2
  need_root
  [ -f "$plugstack" ] || die "plugstack file '$plugstack' does not exist (an empty file is fine)"
  plugstack=$(cd "$(dirname "$plugstack")" && pwd -P)/$(basename "$plugstack")
  MUNGED=$(find_bin munged) || die "munged not found (apt-get install munge; scripts/install-deps.sh --with-slurm)"
  SLURMCTLD=$(find_bin slurmctld) || die "slurmctld not found (scripts/install-deps.sh --with-slurm)"
  SLURMD=$(find_bin slurmd) || die "slurmd not found (scripts/install-deps.sh --with-slurm)"
  for b in srun sbatch sinfo scontrol scancel munge unmunge; do
    command -v "$b" >/dev/null || die "$b not found (scripts/install-deps.sh --with-slurm)"
  done
  local t0=$SECONDS
  dir=$(abs_dir "$dir")
  # Unix socket paths (munge socket, slurmd's spool/<node>_<job>.<step>) max out
  # at 107 bytes.
  [ "${#dir}" -le 64 ] || die "state dir path '$dir' is too long (${#dir} > 64 chars; unix socket limit); use a short dir such as \$(mktemp -d /tmp/lgslurm.XXXXXX)"
  # Leftovers of a crashed run in the same dir: kill them, wipe state.
  do_stop "$dir"
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge-run" "$dir/node-overlay" "$dir/slurmd.overlay"
  [ -n "${LG_SLURMD_OVERLAY:-}" ] && echo "$LG_SLURMD_OVERLAY" >"$dir/slurmd.overlay"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/munge-run"
  chmod 0755 "$dir" "$dir/spool" "$dir/log" "$dir/munge-run"
  chmod 0700 "$dir/munge" "$dir/state"

  local host cport dport
  host=$(hostname -s)
  # Default base port: 20000-29998 by pid, so concurrent clusters (other build
  # dirs, other engineers) rarely race for the same free port.
  cport=$(pick_port "${LG_SLURMCTLD_PORT:-$((20000 + ($$ % 5000) * 2))}")
  dport=$(pick_port "${LG_SLURMD_PORT:-$((cport + 1))}" "$cport")
  write_conf "$dir" "$plugstack" "$host" "$cport" "$dport"
  info "state dir $dir, node $host, ports ctld=$cport slurmd=$dport, plugstack $plugstack"

  # munge
  if [ ! -s "$dir/munge/munge.key" ]; then
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
    else
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 2>/dev/null
    fi
  fi
  chown root:root "$dir/munge/munge.key"; chmod 0600 "$dir/munge/munge.key"
  "$MUNGED" --force --socket="$dir/munge-run/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
    </dev/null >"$dir/log/munged.stdout" 2>&1 || { dump_logs "$dir"; die "munged failed to start"; }
  local ok=0
  for ((i = 0; i < 50; i++)); do
    if munge -S "$dir/munge-run/munge.socket" -n 2>/dev/null | unmunge -S "$dir/munge-run/munge.socket" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || { dump_logs "$dir"; do_stop "$dir"; die "munge round trip failed"; }

  # slurmctld, slurmd (daemonize themselves; pid files under $dir)
  export SLURM_CONF="$dir/slurm.conf"
  "$SLURMCTLD" -f "$dir/slurm.conf" -c -i </dev/null >"$dir/log/slurmctld.stdout" 2>&1 \
    || { dump_logs "$dir"; do_stop "$dir"; die "slurmctld failed to start"; }
  launch_slurmd "$dir" "$host" >"$dir/log/slurmd.stdout" 2>&1 \
    || { dump_logs "$dir"; do_stop "$dir"; die "slurmd failed to start"; }

  # Wait (bounded) for the node to be idle.
  local st="" resumed=0 deadline=$((SECONDS + WAIT_IDLE_S))
  while [ "$SECONDS" -lt "$deadline" ]; do
    st=$(node_state "$dir" "$host")
    case "$st" in
      idle) break ;;
      down*|drain*|drng*|inval*|fail*)
        if [ "$resumed" = 0 ]; then
          info "node is '$st'; trying scontrol update state=resume"
          timeout 10 scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
          resumed=1
        fi ;;
    esac
    for f in slurmctld slurmd munged; do
      pid_alive "$(pidfile_pid "$dir/$f.pid")" && continue
      # slurmd/slurmctld write their pid file after daemonizing; allow a moment.
      [ $((SECONDS - t0)) -lt 5 ] && continue
      dump_logs "$dir"; do_stop "$dir"; die "$f died during start-up"
    done
    sleep 0.5
  done
  if [ "$st" != idle ]; then
    dump_logs "$dir"; do_stop "$dir"
    die "node $host not idle after ${WAIT_IDLE_S}s (state '${st:-unknown}')"
  fi
  info "cluster up in $((SECONDS - t0))s; source $dir/env"
}

do_status() {
  local dir=$1 rc=0 f p
  [ -d "$dir" ] || die "$dir does not exist"
  dir=$(cd "$dir" && pwd -P)
  for f in munged slurmctld slurmd; do
    p=$(pidfile_pid "$dir/$f.pid")
    if pid_alive "$p"; then echo "$f: running (pid $p)"; else echo "$f: not running"; rc=1; fi
  done
  if [ -f "$dir/slurm.conf" ] && [ "$rc" = 0 ]; then
    SLURM_CONF="$dir/slurm.conf" timeout 10 sinfo -N -o '%N %t %c %m %P' || rc=1
  fi
  return "$rc"
}

do_restart_slurmd() {
  local dir host
  need_root
  dir=$(cd "$1" && pwd -P)
  # shellcheck disable=SC1091
  . "$dir/env"
  host=$LG_SLURM_NODE
  SLURMD=$(find_bin slurmd) || die "slurmd not found"
  local p; p=$(pidfile_pid "$dir/slurmd.pid")
  pid_alive "$p" && kill_and_wait "$STOP_WAIT_S" "$p"
  launch_slurmd "$dir" "$host" >>"$dir/log/slurmd.stdout" 2>&1 \
    || { dump_logs "$dir"; die "slurmd failed to restart"; }
  local st="" deadline=$((SECONDS + WAIT_IDLE_S))
  sleep 0.5
  while [ "$SECONDS" -lt "$deadline" ]; do
    st=$(node_state "$dir" "$host")
    [ "$st" = idle ] && pid_alive "$(pidfile_pid "$dir/slurmd.pid")" && { info "slurmd restarted"; return 0; }
    sleep 0.5
  done
  dump_logs "$dir"; die "node not idle after slurmd restart (state '$st')"
}

cmd=${1:-}
case "$cmd" in
  start)          [ "$#" -eq 3 ] || usage; do_start "$2" "$3" ;;
  stop)           [ "$#" -eq 2 ] || usage; do_stop "$2" ;;
  status)         [ "$#" -eq 2 ] || usage; do_status "$2" ;;
  restart-slurmd) [ "$#" -eq 2 ] || usage; do_restart_slurmd "$2" ;;
  node-exec)      [ "$#" -ge 3 ] || usage; shift; do_node_exec "$@" ;;
  reconfigure)    [ "$#" -eq 2 ] || usage; SLURM_CONF="$(cd "$2" && pwd -P)/slurm.conf" timeout 20 scontrol reconfigure ;;
  *) usage ;;
esac
