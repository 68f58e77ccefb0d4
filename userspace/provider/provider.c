// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Registration with libibverbs and device matching.
 *
 * A metaroce device may carry any name the administrator picked with
 * "rdma link add NAME type metaroce ...", and it reports driver_id
 * RDMA_DRIVER_UNKNOWN, so neither libibverbs' driver-id nor its name/modalias
 * tables can recognise it.  Instead the kernel module gives every metaroce
 * ib_device a "metaroce/abi_version" sysfs attribute, and match_device()
 * claims exactly the devices that have it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libmetaroce.h"

void mrv_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("libmetaroce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static bool mrv_str_fits(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/*
 * Before trusting the record libibverbs built, check that the two strings we
 * rely on are where pabi.h says: NUL-terminated inside their arrays, and the
 * path ending in "/<name>".  A mismatch means our private ABI declarations do
 * not describe the loaded libibverbs.
 */
static bool mrv_sysfs_dev_sane(const struct verbs_sysfs_dev *sd)
{
	size_t name_len, path_len;
	const char *tail;

	if (!mrv_str_fits(sd->ibdev_name, sizeof(sd->ibdev_name)) ||
	    !mrv_str_fits(sd->ibdev_path, sizeof(sd->ibdev_path)))
		return false;

	name_len = strlen(sd->ibdev_name);
	path_len = strlen(sd->ibdev_path);
	if (!name_len || path_len <= name_len)
		return false;

	tail = sd->ibdev_path + path_len - name_len;
	return tail[-1] == '/' && !strcmp(tail, sd->ibdev_name);
}

/* Strict decimal u32: digits only, no sign, no spaces, no overflow. */
static int mrv_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static bool mrv_match_device(struct verbs_sysfs_dev *sysfs_dev)
{
	uint32_t abi;
	char buf[16];

	if (!mrv_sysfs_dev_sane(sysfs_dev)) {
		mrv_warn("libibverbs' device record does not match the private ABI this provider was built for (%s); not claiming any device\n",
			 MRV_PABI_VERSION_NAME);
		return false;
	}

	if (ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev,
				      "metaroce/abi_version") < 0)
		return false;	/* not a metaroce device */

	if (mrv_parse_u32(buf, &abi)) {
		mrv_warn("%s: unreadable metaroce/abi_version \"%.15s\"\n",
			 sysfs_dev->ibdev_name, buf);
		return false;
	}
	if (abi != METAROCE_UVERBS_ABI_VERSION) {
		mrv_warn("%s: kernel metaroce ABI %u, this provider supports %u; update libmetaroce or the module\n",
			 sysfs_dev->ibdev_name, abi,
			 METAROCE_UVERBS_ABI_VERSION);
		return false;
	}

	/* libibverbs then checks the uverbs ABI against match_*_abi_version */
	return true;
}

static struct verbs_device *mrv_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct mrv_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	dev->sysfs = sysfs_dev;
	/* Optional: query_device falls back to the numeric fw_ver. */
	if (ibv_read_ibdev_sysfs_file(dev->fw_ver, sizeof(dev->fw_ver),
				      sysfs_dev, "fw_ver") < 0)
		dev->fw_ver[0] = '\0';
	return &dev->vdev;
}

static void mrv_uninit_device(struct verbs_device *vdev)
{
	free(mrv_container_of(vdev, struct mrv_device, vdev));
}

/*
 * Empty on purpose: matching is done by mrv_match_device(), but libibverbs
 * walks match_table without a NULL check for devices with a known driver_id.
 */
static const struct verbs_match_ent mrv_match_table[] = {
	{ .kind = VERBS_MATCH_SENTINEL },
};

const struct verbs_device_ops mrv_device_ops = {
	.name = MRV_PROVIDER_NAME,
	.match_min_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_table = mrv_match_table,
	.match_device = mrv_match_device,
	.alloc_device = mrv_alloc_device,
	.uninit_device = mrv_uninit_device,
	.alloc_context = mrv_alloc_context,
};

/*
 * Which rdma-core release is the process running?  The dynamic linker has
 * already enforced the IBVERBS_PRIVATE_<n> symbol version before this code
 * runs, but one <n> has covered releases with different layouts (34: 44,
 * then 45-56 with a larger ibv_qp_ex), so the release must be one of those
 * this build's declarations cover (pabi.h).  rdma-core's build names the
 * library libibverbs.so.1.<x>.<release>.<patch>; a library named otherwise
 * (built by hand) is taken on trust, the run-time checks remaining.
 * Returns false when the provider must not register.
 */
static bool mrv_check_libibverbs_release(void)
{
	unsigned int lib_minor, release, patch;
	char path[PATH_MAX];
	const char *base;
	Dl_info info;

	if (!dladdr((void *)mrv_verbs_register_driver, &info) ||
	    !info.dli_fname || !realpath(info.dli_fname, path))
		return true;

	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (sscanf(base, "libibverbs.so.1.%u.%u.%u", &lib_minor, &release,
		   &patch) != 3)
		return true;

	if (release < MRV_PABI_RDMA_CORE_FIRST ||
	    release > MRV_PABI_RDMA_CORE_LAST) {
		mrv_warn("not loading: built for the private ABI of rdma-core %u-%u (%s), running with libibverbs from rdma-core %u.%u (%s), whose layouts differ; rebuild libmetaroce against it\n",
			 MRV_PABI_RDMA_CORE_FIRST, MRV_PABI_RDMA_CORE_LAST,
			 MRV_PABI_VERSION_NAME, release, patch, path);
		return false;
	}
	if (release != MRV_PABI_RDMA_CORE && getenv("IBV_SHOW_WARNINGS"))
		mrv_warn("running with libibverbs from rdma-core %u.%u (%s); the private ABI declarations were verified against rdma-core %u\n",
			 release, patch, path, MRV_PABI_RDMA_CORE);
	return true;
}

static void __attribute__((constructor)) mrv_register_driver(void)
{
	if (mrv_check_libibverbs_release())
		mrv_verbs_register_driver(&mrv_device_ops);
}
