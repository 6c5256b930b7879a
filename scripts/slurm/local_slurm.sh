#!/bin/sh
# A one-node Slurm on this machine, for the tests and for trying
# estimator_rt.sbatch locally. Needs root (the daemons run as root, and
# `install` uses apt-get).
#
#   scripts/slurm/local_slurm.sh install   # apt-get slurm-wlm + munge, only
#                                          # if sbatch is missing (Debian)
#   scripts/slurm/local_slurm.sh start     # munged, slurmctld, slurmd; waits
#                                          # for the node to be idle
#   scripts/slurm/local_slurm.sh stop      # stops the daemons `start` started
#   scripts/slurm/local_slurm.sh status    # 'running' (exit 0) or not (1)
#   scripts/slurm/local_slurm.sh env       # prints `export SLURM_CONF=...`
#
# Every command is idempotent: `start` leaves daemons that already run
# alone (and `stop` then leaves them alone too: it stops only what a
# `start` started, recorded in $ERT_SLURM_DIR/started). The configuration is
# written to $ERT_SLURM_DIR/slurm.conf (default /var/lib/ert-slurm), never
# to /etc/slurm, so a real Slurm configuration on the machine is not
# touched; clients find it through SLURM_CONF:
#
#   eval "$(scripts/slurm/local_slurm.sh env)"
#   sbatch --wait --ntasks 3 --overcommit scripts/slurm/estimator_rt.sbatch ...
#
# The node is `localhost` with this machine's CPU count (declaring more
# CPUs than the machine has leaves the node invalid), oversubscribable, so
# jobs with more tasks than CPUs run when submitted with --overcommit.

set -eu

ERT_SLURM_DIR=${ERT_SLURM_DIR:-/var/lib/ert-slurm}
CONF=$ERT_SLURM_DIR/slurm.conf
STARTED=$ERT_SLURM_DIR/started
MUNGE_PID=/run/munge/munged.pid
START_TIMEOUT_SECS=${ERT_SLURM_START_TIMEOUT_SECS:-90}

say() { echo "local_slurm: $*"; }
die() { echo "local_slurm: error: $*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "run as root (the Slurm daemons run as root and \
install uses apt-get); uid is $(id -u)"
}

# Whether the process in pid file $1 runs and is program $2.
alive() {
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null || return 1
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$2" ]
}

do_install() {
  if command -v sbatch >/dev/null 2>&1 && command -v slurmctld >/dev/null \
      2>&1 && command -v munged >/dev/null 2>&1; then
    say "slurm and munge are installed"
    return 0
  fi
  need_root
  command -v apt-get >/dev/null 2>&1 || die "sbatch is missing and there is \
no apt-get: install Slurm (slurm-wlm) and munge with this system's package \
manager"
  say "installing slurm-wlm and munge with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge >/dev/null
  command -v sbatch >/dev/null 2>&1 || die "apt-get ran but sbatch is still \
missing"
}

write_conf() {
  mkdir -p "$ERT_SLURM_DIR/state" "$ERT_SLURM_DIR/spool" "$ERT_SLURM_DIR/log"
  # The node's CPU count must not exceed the machine's.
  cpus=$(nproc)
  cat > "$CONF.new" <<EOF
# Written by scripts/slurm/local_slurm.sh: a one-node Slurm for estimator_rt.
ClusterName=ertlocal
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$ERT_SLURM_DIR/state
SlurmdSpoolDir=$ERT_SLURM_DIR/spool
SlurmctldPidFile=$ERT_SLURM_DIR/slurmctld.pid
SlurmdPidFile=$ERT_SLURM_DIR/slurmd.pid
SlurmctldLogFile=$ERT_SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$ERT_SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# Seconds between SIGTERM and SIGKILL when a step is cancelled or preempted:
# the runtime saves at the end of the compiled loop in flight (cut to ~5 s).
KillWait=30
NodeName=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  mv "$CONF.new" "$CONF"
}

start_munge() {
  if alive "$MUNGE_PID" munged; then
    return 0
  fi
  [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing: \
reinstall munge or create one with mungekey"
  install -d -o munge -g munge -m 0755 /run/munge
  su -s /bin/sh munge -c /usr/sbin/munged
  echo munged >> "$STARTED"
}

start_daemon() {  # $1: slurmctld or slurmd
  if alive "$ERT_SLURM_DIR/$1.pid" "$1"; then
    return 0
  fi
  if [ "$1" = slurmd ]; then
    # -N: this node's name in slurm.conf, whatever the host name is.
    slurmd -f "$CONF" -N localhost
  else
    slurmctld -f "$CONF"
  fi
  echo "$1" >> "$STARTED"
}

do_start() {
  need_root
  command -v slurmctld >/dev/null 2>&1 || die "Slurm is not installed: run \
'$0 install' first"
  mkdir -p "$ERT_SLURM_DIR"
  if ! alive "$ERT_SLURM_DIR/slurmctld.pid" slurmctld; then
    write_conf
  fi
  touch "$STARTED"
  start_munge
  start_daemon slurmctld
  start_daemon slurmd
  # The node turns idle once slurmd registered with slurmctld (~4 s).
  waited=0
  while :; do
    state=$(SLURM_CONF=$CONF sinfo -h -N -o %T 2>/dev/null | head -n 1 || true)
    case $state in
      idle|mixed|allocated) break ;;
    esac
    if [ "$waited" -ge "$START_TIMEOUT_SECS" ]; then
      die "the node is '$state' after ${START_TIMEOUT_SECS} s; see \
$ERT_SLURM_DIR/log/"
    fi
    sleep 1
    waited=$((waited + 1))
  done
  say "running (node $state); SLURM_CONF=$CONF"
}

stop_pid_file() {  # $1: pid file, $2: program
  if alive "$1" "$2"; then
    pid=$(cat "$1")
    kill "$pid"
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 30 ]; do
      sleep 1
      i=$((i + 1))
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
}

do_stop() {
  [ -f "$STARTED" ] || { say "nothing started here to stop"; return 0; }
  need_root
  # The reverse of the start order; only what `start` started.
  if grep -qx slurmd "$STARTED"; then
    stop_pid_file "$ERT_SLURM_DIR/slurmd.pid" slurmd
  fi
  if grep -qx slurmctld "$STARTED"; then
    stop_pid_file "$ERT_SLURM_DIR/slurmctld.pid" slurmctld
  fi
  if grep -qx munged "$STARTED"; then
    stop_pid_file "$MUNGE_PID" munged
  fi
  rm -f "$STARTED"
  say "stopped"
}

do_status() {
  if alive "$ERT_SLURM_DIR/slurmctld.pid" slurmctld && \
      alive "$ERT_SLURM_DIR/slurmd.pid" slurmd && alive "$MUNGE_PID" munged
  then
    echo running
  else
    echo "not running"
    return 1
  fi
}

case ${1:-} in
  install) do_install ;;
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
