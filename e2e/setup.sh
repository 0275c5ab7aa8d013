#!/usr/bin/env bash
# setup.sh prepares this machine for `go test -tags e2e ./e2e/...`.
#
# CI machines start with no docker daemon and no images, and no public registry is reachable, so
# this script installs the host packages, starts dockerd by hand (the init script is broken by the
# ulimit: docker-here.md §7 in the shared reference docs) and builds the offline base image with
# debootstrap from the mirror in the machine's own apt sources. It registers gVisor (Debian's runsc)
# with the daemon twice: as runsc with --network=host (the agent stays in netd's kernel rules),
# which abox accepts, and as runsc-netstack, gVisor's own network stack, which abox must refuse
# (the e2e tests show both). It is idempotent: a second run only checks.
# It prints one line per step and the tail of a log when a step fails.
#
# Environment:
#   ABOX_E2E_BASE        base image to build (default abox-e2e-base:bookworm)
#   ABOX_E2E_CACHE       cache directory (default: e2e/.cache next to this script)
#   ABOX_E2E_DEBIAN_URL  Debian mirror (default: the first non-security URI in the apt sources)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive DOCKER_BUILDKIT=0

base_image=${ABOX_E2E_BASE:-abox-e2e-base:bookworm}
cache=${ABOX_E2E_CACHE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.cache}
work=$cache/setup
# docker.io and the rest run the suite; git, npm and perl are what tests call on the host (the
# hermetic suite's nft, git and perl checks too), so that no test skips in CI for want of one.
# runsc is gVisor, for the tests that run the agent under it.
packages=(docker.io debootstrap nftables iptables ca-certificates git npm perl runsc)
dockerd_wait=60

# now prints the time in microseconds.
now() { echo "${EPOCHREALTIME/[.,]/}"; }

started=$(now)

# step prints one progress line with the seconds spent since $1 (from now).
step() {
	local us=$(($(now) - $1))
	shift
	printf 'setup: %s (%d.%01ds)\n' "$*" $((us / 1000000)) $((us / 100000 % 10))
}

die() {
	printf 'setup: error: %s\n' "$*" >&2
	exit 1
}

# show_log prints the end of a log file to stderr after a failed step.
show_log() {
	printf -- '--- last lines of %s ---\n' "$1" >&2
	tail -n 30 "$1" >&2 || true
}

install_packages() {
	local t missing=() p
	t=$(now)
	for p in "${packages[@]}"; do
		# Any docker engine will do; installing docker.io over docker-ce would conflict. Likewise
		# any npm: Debian's would conflict with a nodejs that brings its own.
		[[ $p == docker.io ]] && command -v dockerd >/dev/null && continue
		[[ $p == npm ]] && command -v npm >/dev/null && continue
		if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
			missing+=("$p")
		fi
	done
	if ((${#missing[@]} == 0)); then
		step "$t" "host packages: present"
		return
	fi
	local log=$work/apt.log
	if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
		show_log "$log"
		die "installing ${missing[*]} failed"
	fi
	step "$t" "host packages: installed ${missing[*]}"
}

# mount_cgroups mounts the cgroup v1 hierarchies as Debian's cgroupfs-mount does, for machines
# that boot without an init system mounting them.
mount_cgroups() {
	mountpoint -q /sys/fs/cgroup && return
	mount -t tmpfs -o uid=0,gid=0,mode=0755 cgroup /sys/fs/cgroup
	local sys hier num enabled
	while read -r sys hier num enabled; do
		[[ $sys == \#* || $enabled != 1 ]] && continue
		mkdir -p "/sys/fs/cgroup/$sys"
		mountpoint -q "/sys/fs/cgroup/$sys" || mount -n -t cgroup -o "$sys" cgroup "/sys/fs/cgroup/$sys" || true
	done </proc/cgroups
}

# dockerd_running reports whether the pid file names a live dockerd.
dockerd_running() {
	local pid
	[[ -s /var/run/docker.pid ]] || return 1
	pid=$(</var/run/docker.pid)
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == dockerd ]]
}

start_dockerd() {
	local t how=running
	t=$(now)
	if ! docker info >/dev/null 2>&1; then
		mount_cgroups
		if dockerd_running; then
			how="waited for the dockerd already starting"
		else
			rm -f /var/run/docker.pid
			# setsid: the daemon must outlive this script and the test binary that ran it, and
			# must not hold their output pipes or our lock open.
			setsid -f dockerd </dev/null >"$work/dockerd.log" 2>&1 9>&-
			how="started dockerd, log $work/dockerd.log"
		fi
		local deadline=$((SECONDS + dockerd_wait))
		until docker info >/dev/null 2>&1; do
			if ((SECONDS >= deadline)); then
				show_log "$work/dockerd.log"
				die "docker daemon not ready after ${dockerd_wait}s"
			fi
			sleep 0.5
		done
	fi
	step "$t" "docker daemon: $how"
}

# register_runsc adds the two gVisor runtimes to /etc/docker/daemon.json, keeping every other key,
# and makes the running daemon reload it with SIGHUP, which leaves its containers running (the
# daemon is shared; it is never restarted here).
register_runsc() {
	local t conf=/etc/docker/daemon.json path
	t=$(now)
	path=$(command -v runsc) || die "runsc is not installed"
	if docker info --format '{{json .Runtimes}}' 2>/dev/null | runsc_registered "$path"; then
		step "$t" "gVisor runtimes: registered (runsc, runsc-netstack)"
		return
	fi
	mkdir -p /etc/docker
	perl -MJSON::PP -e '
		my ($conf, $path) = @ARGV;
		my $d = {};
		if (-s $conf) {
			open(my $in, "<", $conf) or die "$conf: $!\n";
			local $/;
			$d = decode_json(<$in>);
		}
		$d->{runtimes}{runsc} = {path => $path, runtimeArgs => ["--network=host"]};
		$d->{runtimes}{"runsc-netstack"} = {path => $path, runtimeArgs => []};
		open(my $out, ">", "$conf.tmp") or die "$conf.tmp: $!\n";
		print $out JSON::PP->new->pretty->canonical->encode($d);
		close($out) or die "$conf.tmp: $!\n";
		rename("$conf.tmp", $conf) or die "$conf: $!\n";
	' "$conf" "$path" || die "could not write $conf"
	dockerd_running || die "no dockerd pid in /var/run/docker.pid to reload $conf"
	kill -HUP "$(</var/run/docker.pid)"
	local deadline=$((SECONDS + 10))
	until docker info --format '{{json .Runtimes}}' 2>/dev/null | runsc_registered "$path"; do
		((SECONDS < deadline)) || die "dockerd did not pick up the runtimes of $conf after SIGHUP (see its log)"
		sleep 0.2
	done
	step "$t" "gVisor runtimes: registered runsc, runsc-netstack in $conf (dockerd reloaded)"
}

# runsc_registered reads `docker info`'s Runtimes on stdin and succeeds when both gVisor runtimes
# are there as register_runsc writes them.
runsc_registered() {
	perl -MJSON::PP -e '
		my $r = eval { decode_json(join("", <STDIN>)) } or exit 1;
		my ($ok, $ns) = ($r->{runsc}, $r->{"runsc-netstack"});
		exit 1 unless $ok && $ns && $ok->{path} eq $ARGV[0] && $ns->{path} eq $ARGV[0];
		exit 1 unless join(" ", @{$ok->{runtimeArgs} // []}) eq "--network=host";
		exit 1 if @{$ns->{runtimeArgs} // []};
	' "$1"
}

# debian_url prints the Debian archive this machine installs from.
debian_url() {
	if [[ -n ${ABOX_E2E_DEBIAN_URL:-} ]]; then
		echo "$ABOX_E2E_DEBIAN_URL"
		return
	fi
	local url=""
	if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
		url=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
			/etc/apt/sources.list.d/debian.sources)
	fi
	if [[ -z $url && -r /etc/apt/sources.list ]]; then
		url=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) { print $i; exit } }' \
			/etc/apt/sources.list)
	fi
	[[ -n $url ]] || die "no Debian mirror in the apt sources; set ABOX_E2E_DEBIAN_URL"
	echo "$url"
}

# remove_rootfs deletes a debootstrap target, unmounting whatever a failed run left mounted in it
# first so that rm never walks into the host's /proc or /sys.
remove_rootfs() {
	local root=$1
	[[ -d $root ]] || return 0
	awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r umount -l
	rm -rf --one-file-system "$root"
}

build_base() {
	local t
	t=$(now)
	if docker image inspect "$base_image" >/dev/null 2>&1; then
		step "$t" "base image $base_image: present"
		return
	fi
	local url root=$work/rootfs log=$work/debootstrap.log
	url=$(debian_url)
	remove_rootfs "$root"
	trap 'remove_rootfs "$root"' EXIT
	if ! debootstrap --variant=minbase bookworm "$root" "$url" >"$log" 2>&1; then
		show_log "$log"
		die "debootstrap from $url failed"
	fi
	if ! tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$base_image" >"$log" 2>&1; then
		show_log "$log"
		die "docker import of $base_image failed"
	fi
	remove_rootfs "$root"
	trap - EXIT
	step "$t" "base image $base_image: built from $url"
}

main() {
	[[ $(id -u) == 0 ]] || die "must run as root (it installs packages and starts dockerd)"
	mkdir -p "$work"
	# Test binaries of several packages may run this at once; one of them does the work.
	exec 9>"$work/setup.lock"
	flock 9
	install_packages
	start_dockerd
	register_runsc
	build_base
	step "$started" "ready"
}

main "$@"
