# The cgroup the labs' apps are launched under ($cgroot/$launch, unique to the lab; netextd is given
# it as NETEXT_APP_CGROUP), and an EXIT trap that kills what runs there and removes it before the
# lab goes. Source after scripts/lib/e2e.sh. Exits with FAIL when no cgroup v2 hierarchy is mounted.
cgroot="$(findmnt -n -t cgroup2 -o TARGET | head -1)"
[ -n "$cgroot" ] || { echo "FAIL no cgroup v2 hierarchy is mounted"; exit 1; }
launch="netext-apps-$LAB_PREFIX"
app_cgroups_remove() {
  if [ -d "$cgroot/$launch" ]; then
    find "$cgroot/$launch" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
    find "$cgroot/$launch" -depth -type d -exec rmdir {} + 2>/dev/null
  fi
}
app_cgroups_cleanup() { app_cgroups_remove; e2e_cleanup; }
trap app_cgroups_cleanup EXIT

# Starts netextd in the laptop with the cgroup v2 hierarchy mounted there and $launch as its apps'
# root, logging to $work/netextd.log, and waits (15 s) until it answers. Sets NETEXTD_PID.
app_cgroups_start_netextd() {
  export NETEXT_APP_CGROUP="$launch"
  lab_spawn "$LAB_LAPTOP" sh -c "mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec '$bin/netextd' 2>> '$work/netextd.log'"; NETEXTD_PID=$!
  lab_wait "'$bin/netext' status" 15
}
