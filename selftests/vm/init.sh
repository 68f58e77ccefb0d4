#!/.mr/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# /init of the test VM (PID 1, busybox ash). Mounts the userland's /usr
# (the host's or a release's root filesystem), the modules tree and the
# source tree over virtio-9p, runs the command the runner left in the
# per-run share (/.mr/run/cmd.sh) with that userland's bash, then stores its
# exit status and the kernel log there and powers off.
#
# Busybox is only used until /usr is mounted; it lives in /.mr/bin so that it
# never shadows the real tools (/bin and /sbin are symlinks into /usr).

export PATH=/.mr/bin

# Early failures have nobody to report to: the runner sees no status file
# and prints the console.
fail() {
	echo "mr-init: $*" >&2
	poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# virtio/9p modules the runner resolved from modules.dep, in load order.
while read -r m; do
	insmod "/.mr/mod/$m" || fail "insmod $m failed"
done </.mr/modules

p9() { # TAG DIR OPTIONS
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$3" "$1" "$2" ||
		fail "cannot mount 9p share $1 on $2"
}

p9 mrrun /.mr/run rw
. /.mr/run/config # MR_REPO MR_CWD MR_STDIN MR_TERM MR_USERLAND(_BUILD)

p9 usr /usr ro,cache=loose
p9 modules /lib/modules ro,cache=loose

# /lib is a real directory (it holds the modules mount point): give it
# every other entry of /usr/lib, the dynamic loader's directory included.
for e in /usr/lib/*; do
	[ "$e" = /usr/lib/modules ] || ln -s "$e" "/lib/${e##*/}"
done

mkdir -p /dev/shm
for d in /tmp /run /var/tmp /dev/shm; do
	mount -t tmpfs -o mode=1777 tmpfs "$d"
done
chmod 755 /run
# After the tmpfs mounts: the source tree may live under /tmp.
mkdir -p "$MR_REPO"
p9 repo "$MR_REPO" rw
# Another release's userland: our userspace built against it is what the
# tests find in build/userspace.
if [ -n "$MR_USERLAND_BUILD" ]; then
	mount -o bind "$MR_USERLAND_BUILD" "$MR_REPO/build/userspace" ||
		fail "cannot mount $MR_USERLAND_BUILD on $MR_REPO/build/userspace"
fi
mkdir -p /run/netns /run/lock /dev/pts
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t debugfs debugfs /sys/kernel/debug
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr

# From here on the real tools are available.
/usr/sbin/modprobe configfs && mount -t configfs configfs /sys/kernel/config
hostname mr-vm
/usr/sbin/ip link set lo up
# libibverbs loads our freshly built provider by absolute path, adding the
# suffix of its private ABI (-rdmav34.so, -rdmav65.so, ...), only when it
# exists: a missing one makes every verbs tool print a warning.
prov=$MR_REPO/build/userspace/provider/libmetaroce
for f in "$prov"-rdmav*.so; do
	[ -e "$f" ] && echo "driver $prov" >/etc/libibverbs.d/metaroce.driver
	break
done

awk -v u="${MR_USERLAND:-host}" \
	'{ printf "# vm: boot-to-cmd %.1f s (userland: %s)\n", $1, u }' /proc/uptime

cd "$MR_CWD" || fail "cannot cd to $MR_CWD"
# A clean environment, as a login would give; the runner forwards MR_*
# variables through cmd.sh.
/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin \
	HOME=/root TERM="$MR_TERM" LANG=C.UTF-8 SHELL=/usr/bin/bash \
	PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/bash /.mr/run/cmd.sh <"$MR_STDIN"
rc=$?

# The status file is written last: its presence means the run completed.
/usr/bin/dmesg >/.mr/run/dmesg 2>&1 || dmesg -s 16777216 >/.mr/run/dmesg
echo "$rc" >/.mr/run/status.tmp
mv /.mr/run/status.tmp /.mr/run/status
sync
poweroff -f
