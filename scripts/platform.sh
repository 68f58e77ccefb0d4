# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# scripts/platform.sh: sourced (never run) by the scripts that deal with
# the Debian releases MetaRoCE is tested on. The host is Debian 12
# (bookworm); the kernels and the userland (rdma-core, perftest, pyverbs)
# of newer releases come from the same archive, through a private apt
# configuration (build/apt/SUITE/) and a root filesystem of that release
# (build/rootfs/SUITE/, made by scripts/rootfs.sh). Nothing of another
# release is ever installed on the host, and the host's apt sources are
# only read, for the archive's address.
#
#   mr_kernel NAME        NAME is a kernel of scripts/kernels.env (6.12,
#                         6.1, 6.12-trixie, 7.2, ...) or a release string;
#                         sets MR_REL (its release, e.g. 7.2.13+deb14-amd64)
#                         and MR_SUITE (the Debian release it comes from;
#                         empty for the host's own); "debug" and
#                         "debug-kcsan" are the kernels scripts/debug-kernel.sh
#                         builds (make check-debug), for which it also sets
#                         MR_KDIR, their build tree (else empty)
#   mr_kernel_names [--host]
#                         the NAMEs of kernels.env, in its order (--host: only
#                         those of the host's release)
#   mr_suites             the releases other than the host's that kernels.env
#                         uses
#   mr_userland NAME      "host" or a suite name -> MR_USERLAND: "" for the
#                         host's, else the suite
#   mr_host_suite         the host's codename (bookworm)
#   mr_archive            sets MR_ARCHIVE_URI and MR_ARCHIVE_KEYRING from the
#                         host's apt sources
#   mr_apt SUITE ARGS...  apt-get ARGS with build/apt/SUITE's configuration
#                         (package lists fetched on first use)
#   mr_apt_acquire_conf   path of a file with the host's Acquire:: settings
#   mr_apt_cache SUITE ARGS...
#                         the same for apt-cache
#   mr_apt_download SUITE DIR PKG...
#                         apt-get download into DIR, refreshing the lists
#                         once if a package is not found
#   mr_rootfs_dir SUITE   build/rootfs/SUITE
#   mr_in_rootfs SUITE CMD...
#                         runs CMD inside build/rootfs/SUITE with the source
#                         tree mounted at its own path and the current
#                         directory kept (needs root: a mount namespace and
#                         chroot)
#
# Needs MR_TOP (the source tree) to be set.

: "${MR_TOP:?platform.sh needs MR_TOP}"

# shellcheck source=kernels.env
. "$MR_TOP/scripts/kernels.env"

mr_host_suite() {
	local codename
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	echo "${codename:-bookworm}"
}

# kernels.env names a kernel NAME by MR_KVER_<NAME in upper case with "."
# and "-" as "_">; its Debian release, if not the host's, is
# MR_KSUITE_<same>.
mr_kernel_var() { # NAME
	local v=${1//[.-]/_}
	echo "${v^^}"
}

mr_kernel() { # NAME
	local name=$1 key var svar
	key=$(mr_kernel_var "$name")
	var=MR_KVER_$key svar=MR_KSUITE_$key
	MR_REL=$name MR_SUITE='' MR_KDIR=''
	if [[ $name == debug || $name == debug-kcsan ]]; then
		# The debug kernels of make check-debug, built from source by
		# scripts/debug-kernel.sh, which records their release.
		local relfile=$MR_TOP/build/debug-kernel/$name.release
		if [[ ! -f $relfile ]]; then
			echo "platform: no $name kernel built: scripts/debug-kernel.sh $name" >&2
			return 1
		fi
		MR_REL=$(<"$relfile")
		# shellcheck disable=SC2034 # for the caller (build-module.sh)
		MR_KDIR=$MR_TOP/build/debug-kernel/obj-$name
	elif [[ $key =~ ^[A-Z0-9_]+$ && -n ${!var:-} ]]; then
		MR_REL=${!var}
		MR_SUITE=${!svar:-}
	else
		# A release string: find the name that pins it, for its suite.
		local n
		for n in $(mr_kernel_names); do
			key=$(mr_kernel_var "$n")
			var=MR_KVER_$key svar=MR_KSUITE_$key
			if [[ ${!var} == "$name" ]]; then
				MR_SUITE=${!svar:-}
				break
			fi
		done
	fi
	[[ $MR_REL =~ ^[A-Za-z0-9][A-Za-z0-9.+_~-]*$ ]] || {
		echo "platform: bad kernel name or release '$name'" >&2
		return 1
	}
	[[ $MR_SUITE != "$(mr_host_suite)" ]] || MR_SUITE=
}

# NAMEs in kernels.env order: MR_KVER_6_12_TRIXIE -> 6.12-trixie (the
# first "_" between digits is a ".", the others "-").
mr_kernel_names() {
	local n
	for n in $(sed -n 's/^MR_KVER_\([0-9A-Z_]*\)=.*/\1/p' "$MR_TOP/scripts/kernels.env" |
		sed -E 's/^([0-9]+)_([0-9]+)/\1.\2/; s/_/-/g' | tr '[:upper:]' '[:lower:]'); do
		if [[ ${1:-} == --host ]]; then
			mr_kernel "$n" && [[ -z $MR_SUITE ]] || continue
		fi
		echo "$n"
	done
}

mr_suites() {
	sed -n 's/^MR_KSUITE_[0-9A-Z_]*=\(.*\)$/\1/p' "$MR_TOP/scripts/kernels.env" |
		awk '!seen[$0]++'
}

mr_userland() { # host|SUITE
	MR_USERLAND=$1
	case $MR_USERLAND in
	"" | host | "$(mr_host_suite)") MR_USERLAND= ;;
	*[!a-z0-9-]*)
		echo "platform: bad userland '$1'" >&2
		return 1
		;;
	esac
}

# The host's Debian archive: the first enabled "deb" entry of the apt
# sources whose suites include the host's codename (deb822 .sources files
# and one-line .list files; other files in sources.list.d are not sources).
mr_archive() {
	local want files=() line
	[[ -n ${MR_ARCHIVE_URI:-} ]] && return 0
	want=$(mr_host_suite)
	[[ -f /etc/apt/sources.list ]] && files+=(/etc/apt/sources.list)
	for line in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[[ -f $line ]] && files+=("$line")
	done
	((${#files[@]})) || { echo "platform: no apt sources in /etc/apt" >&2; return 1; }
	line=$(awk -v want="$want" '
		function flush(   n, s, i, u) {
			if (!found && types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
				n = split(suites, s, /[ \t]+/)
				for (i = 1; i <= n; i++)
					if (s[i] == want) {
						split(uris, u, /[ \t]+/)
						print u[1] "\t" keyring
						found = 1
					}
			}
			types = uris = suites = enabled = keyring = ""
		}
		FNR == 1 { flush(); deb822 = (FILENAME ~ /\.sources$/) }
		/^[ \t]*#/ { next }
		deb822 && /^[ \t]*$/ { flush(); next }
		deb822 && /^[A-Za-z-]+:/ {
			field = tolower($1); sub(/:$/, "", field)
			val = $0; sub(/^[^:]*:[ \t]*/, "", val)
			if (field == "types") types = val
			else if (field == "uris") uris = val
			else if (field == "suites") suites = val
			else if (field == "enabled") enabled = val
			else if (field == "signed-by" && val ~ /^\//) keyring = val
			next
		}
		!deb822 && $1 == "deb" {
			sub(/#.*/, "")
			keyring = ""
			i = 2
			if ($2 ~ /^\[/) {
				opts = ""
				for (; i <= NF; i++) { opts = opts " " $i; if ($i ~ /\]$/) { i++; break } }
				if (match(opts, /signed-by=[^] ]+/))
					keyring = substr(opts, RSTART + 10, RLENGTH - 10)
			}
			types = "deb"; uris = $i; suites = $(i + 1)
			flush()
		}
		END { flush() }' "${files[@]}" | head -n 1)
	MR_ARCHIVE_URI=${line%%$'\t'*}
	MR_ARCHIVE_KEYRING=${line#*$'\t'}
	[[ -n $MR_ARCHIVE_URI && $MR_ARCHIVE_URI == *://* ]] || {
		echo "platform: no 'deb' source for $want in the host's apt sources" >&2
		return 1
	}
	[[ -n $MR_ARCHIVE_KEYRING && -r $MR_ARCHIVE_KEYRING ]] ||
		MR_ARCHIVE_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
}

mr_apt_dir() { echo "$MR_TOP/build/apt/$1"; }

# The host's settings for reaching its archive (proxies, and whether an
# expired Release file is acceptable: a snapshot mirror's are), as an apt
# configuration file for tools that do not read the host's (mmdebstrap).
# apt-get itself reads the host's apt.conf(.d) with mr_apt: only the sources,
# preferences and state are private.
mr_apt_acquire_conf() {
	local f=$MR_TOP/build/apt/host-acquire.conf
	mkdir -p "${f%/*}"
	apt-config dump |
		grep -E '^Acquire::(Check-Valid-Until|Check-Date|Retries|ForceIPv[46]|(https?|ftp)::(Proxy|Proxy-Auto-Detect|Proxy::[^ ]+)) ' \
			>"$f.tmp" || true
	mv "$f.tmp" "$f"
	echo "$f"
}

# Writes build/apt/SUITE's sources (binary and source packages of SUITE's
# main component from the host's archive) and fetches the package lists
# when they are absent or the sources changed.
mr_apt_setup() { # SUITE
	local suite=$1 d src
	d=$(mr_apt_dir "$suite")
	mr_archive || return 1
	mkdir -p "$d/empty" "$d/state/lists/partial" "$d/cache/archives/partial"
	[[ -f $d/state/status ]] || : >"$d/state/status"
	src="deb [signed-by=$MR_ARCHIVE_KEYRING] $MR_ARCHIVE_URI $suite main"
	src+=$'\n'"deb-src [signed-by=$MR_ARCHIVE_KEYRING] $MR_ARCHIVE_URI $suite main"
	if [[ ! -f $d/sources.list || $(<"$d/sources.list") != "$src" ]] ||
		! compgen -G "$d/state/lists/*_Packages*" >/dev/null; then
		echo "$src" >"$d/sources.list"
		mr_apt "$suite" update -q >&2 || return 1
	fi
}

# The options that make apt-get/apt-cache use build/apt/SUITE only.
mr_apt_opts() { # SUITE
	local d
	d=$(mr_apt_dir "$1")
	MR_APT_OPTS=(-o Dir::Etc::SourceList="$d/sources.list"
		-o Dir::Etc::SourceParts="$d/empty"
		-o Dir::Etc::Preferences="$d/empty/none"
		-o Dir::Etc::PreferencesParts="$d/empty"
		-o Dir::State="$d/state" -o Dir::State::Lists="$d/state/lists"
		-o Dir::State::Status="$d/state/status"
		-o Dir::State::extended_states="$d/state/extended_states"
		-o Dir::Cache="$d/cache" -o APT::Sandbox::User=root
		-o Debug::NoLocking=true)
}

mr_apt() { # SUITE ARGS...
	local suite=$1
	shift
	[[ -f $(mr_apt_dir "$suite")/sources.list ]] || mr_apt_setup "$suite" || return 1
	mr_apt_opts "$suite"
	apt-get "${MR_APT_OPTS[@]}" "$@"
}

mr_apt_cache() { # SUITE ARGS...
	local suite=$1
	shift
	[[ -f $(mr_apt_dir "$suite")/sources.list ]] || mr_apt_setup "$suite" || return 1
	mr_apt_opts "$suite"
	apt-cache "${MR_APT_OPTS[@]}" "$@"
}

mr_apt_download() { # SUITE DIR PKG...
	local suite=$1 dir=$2
	shift 2
	mr_apt_setup "$suite" || return 1
	(cd "$dir" && mr_apt "$suite" download -q "$@" >/dev/null 2>&1) && return 0
	# The lists may be stale (the archive replaced the version): refresh.
	mr_apt "$suite" update -q >&2 || return 1
	(cd "$dir" && mr_apt "$suite" download -q "$@" >&2)
}

mr_rootfs_dir() { echo "$MR_TOP/build/rootfs/$1"; }

mr_in_rootfs() { # SUITE CMD...
	local suite=$1 root
	shift
	local cwd=$PWD
	[[ $cwd == "$MR_TOP" || $cwd == "$MR_TOP"/* ]] || cwd=$MR_TOP
	root=$(mr_rootfs_dir "$suite")
	[[ -f $root/.mr-stamp ]] || {
		echo "platform: no root filesystem for $suite in $root (make deps)" >&2
		return 1
	}
	# A private mount namespace: the mounts vanish with the command.
	unshare --mount --propagation private -- /bin/bash -c '
		set -e
		root=$1 top=$2 cwd=$3
		shift 3
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
		mkdir -p "$root$top"
		mount --bind "$top" "$root$top"
		exec chroot "$root" /usr/bin/env -i \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin \
			HOME=/root LANG=C.UTF-8 TERM=dumb MR_IN_ROOTFS=1 \
			/bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
	' mr-rootfs "$root" "$MR_TOP" "$cwd" "$@"
}
