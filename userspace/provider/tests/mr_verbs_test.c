// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mr_verbs_test: exercise libmetaroce on a live device (prints TAP).
 *
 *   mr_verbs_test DEVICE
 *	open DEVICE, query device and port 1 and compare with sysfs, allocate
 *	and free protection domains; DEVICE's netdev must be up.
 *   mr_verbs_test --owner DEVICE PROVIDER
 *	check that libibverbs handed DEVICE to the provider named PROVIDER
 *	(e.g. "rxe" for a soft-RoCE device next to metaroce ones).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pabi.h"
#include "tap.h"

/* Read <ibdev_path>/<file> into buf without its trailing newline. */
static int read_sysfs(const struct ibv_device *dev, const char *file,
		      char *buf, size_t size)
{
	char path[IBV_SYSFS_PATH_MAX + 64];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dev->ibdev_path, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return 0;
}

static struct ibv_device *find_device(struct ibv_device **list,
				      const char *name)
{
	for (; *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

static const char *provider_of(struct ibv_device *dev)
{
	return mrv_verbs_device(dev)->ops->name;
}

static int test_owner(const char *name, const char *provider)
{
	struct ibv_device **list, *dev;

	tap_plan(1);
	list = ibv_get_device_list(NULL);
	if (!list)
		tap_bail("ibv_get_device_list: %s", strerror(errno));
	dev = find_device(list, name);
	tap_ok(dev && !strcmp(provider_of(dev), provider),
	       "%s is handled by provider %s (got %s)", name, provider,
	       dev ? provider_of(dev) : "no device");
	ibv_free_device_list(list);
	return tap_done();
}

static void format_guid(char *buf, size_t size, __be64 be_guid)
{
	uint64_t guid = be64toh(be_guid);

	snprintf(buf, size, "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48) & 0xffff,
		 (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
}

static void format_gid(char *buf, size_t size, const union ibv_gid *gid)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, size,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
		 r[10], r[11], r[12], r[13], r[14], r[15]);
}

static void test_device(struct ibv_device *dev, struct ibv_context *ctx)
{
	struct ibv_device_attr_ex attr = {};
	struct ibv_device_attr old = {};
	char sysfs[64], ours[64];
	int ret;

	ret = ibv_query_device_ex(ctx, NULL, &attr);
	tap_ok(!ret, "ibv_query_device_ex (%s)", strerror(ret));
	tap_ok(attr.orig_attr.phys_port_cnt == 1 && attr.phys_port_cnt_ex == 1,
	       "one port (phys_port_cnt %u, ex %u)",
	       attr.orig_attr.phys_port_cnt, attr.phys_port_cnt_ex);

	format_guid(ours, sizeof(ours), attr.orig_attr.node_guid);
	tap_ok(attr.orig_attr.node_guid &&
	       attr.orig_attr.node_guid == ibv_get_device_guid(dev) &&
	       !read_sysfs(dev, "node_guid", sysfs, sizeof(sysfs)) &&
	       !strcmp(sysfs, ours),
	       "node_guid %s matches ibv_get_device_guid and sysfs", ours);

	/* sysfs fw_ver is empty unless the driver provides a string */
	tap_ok(attr.orig_attr.fw_ver[0] &&
	       !read_sysfs(dev, "fw_ver", sysfs, sizeof(sysfs)) &&
	       (!sysfs[0] || !strcmp(sysfs, attr.orig_attr.fw_ver)),
	       "fw_ver \"%s\" is set and agrees with sysfs \"%s\"",
	       attr.orig_attr.fw_ver, sysfs);

	tap_ok(attr.orig_attr.max_qp > 0 && attr.orig_attr.max_cq > 0 &&
	       attr.orig_attr.max_pd > 0 && attr.orig_attr.max_mr > 0,
	       "max_qp %d max_cq %d max_pd %d max_mr %d are positive",
	       attr.orig_attr.max_qp, attr.orig_attr.max_cq,
	       attr.orig_attr.max_pd, attr.orig_attr.max_mr);

	ret = ibv_query_device(ctx, &old);
	tap_ok(!ret && old.node_guid == attr.orig_attr.node_guid &&
	       old.max_qp == attr.orig_attr.max_qp &&
	       !strcmp(old.fw_ver, attr.orig_attr.fw_ver),
	       "ibv_query_device agrees with ibv_query_device_ex");
}

static int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : -1;
}

static void test_port(struct ibv_device *dev, struct ibv_context *ctx)
{
	struct ibv_port_attr pa = {}, bad = {};
	char sysfs[64], gidstr[48];
	union ibv_gid gid = {};
	int ret;

	ret = ibv_query_port(ctx, 1, &pa);
	tap_ok(!ret, "ibv_query_port(1) (%s)", strerror(ret));
	tap_ok(pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	       "link layer is Ethernet (%u)", pa.link_layer);
	tap_ok(pa.state == IBV_PORT_ACTIVE &&
	       !read_sysfs(dev, "ports/1/state", sysfs, sizeof(sysfs)) &&
	       !strcmp(sysfs, "4: ACTIVE"),
	       "port is ACTIVE (%s), as sysfs says", ibv_port_state_str(pa.state));
	tap_ok(pa.max_mtu >= IBV_MTU_256 && pa.max_mtu <= IBV_MTU_4096 &&
	       pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu,
	       "MTUs are valid (max %d, active %d)",
	       mtu_bytes(pa.max_mtu), mtu_bytes(pa.active_mtu));
	tap_ok(pa.gid_tbl_len > 0 && pa.pkey_tbl_len > 0,
	       "GID table (%d) and P_Key table (%u) are not empty",
	       pa.gid_tbl_len, pa.pkey_tbl_len);

	ret = ibv_query_gid(ctx, 1, 0, &gid);
	format_gid(gidstr, sizeof(gidstr), &gid);
	tap_ok(!ret && (gid.global.subnet_prefix || gid.global.interface_id) &&
	       !read_sysfs(dev, "ports/1/gids/0", sysfs, sizeof(sysfs)) &&
	       !strcmp(sysfs, gidstr),
	       "GID 0 %s is set and matches sysfs", gidstr);

	tap_ok(ibv_query_port(ctx, 0, &bad) != 0, "port 0 is rejected");
	tap_ok(ibv_query_port(ctx, 2, &bad) != 0, "port 2 is rejected");
}

static void test_pd(struct ibv_device *dev, struct ibv_context *ctx)
{
	struct ibv_context *ctx2;
	struct ibv_pd *pd1, *pd2, *pd3;

	pd1 = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	tap_ok(pd1 && pd2 && pd1->context == ctx && pd2->context == ctx &&
	       pd1->handle != pd2->handle,
	       "two PDs with distinct handles (%u, %u)",
	       pd1 ? pd1->handle : 0, pd2 ? pd2->handle : 0);

	ctx2 = ibv_open_device(dev);
	tap_ok(ctx2 != NULL, "a second context opens");
	pd3 = ctx2 ? ibv_alloc_pd(ctx2) : NULL;
	tap_ok(pd3 && pd3->context == ctx2, "a PD on the second context");
	tap_ok(pd3 && !ibv_dealloc_pd(pd3), "PD on the second context freed");
	tap_ok(ctx2 && !ibv_close_device(ctx2), "second context closed");

	tap_ok(pd1 && !ibv_dealloc_pd(pd1), "first PD freed");
	tap_ok(pd2 && !ibv_dealloc_pd(pd2), "second PD freed");
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev;
	struct ibv_context *ctx;

	if (argc == 4 && !strcmp(argv[1], "--owner"))
		return test_owner(argv[2], argv[3]);
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"usage: %s DEVICE\n       %s --owner DEVICE PROVIDER\n",
			argv[0], argv[0]);
		return 2;
	}

	tap_plan(25);
	list = ibv_get_device_list(NULL);
	if (!list)
		tap_bail("ibv_get_device_list: %s", strerror(errno));
	dev = find_device(list, argv[1]);
	tap_ok(dev != NULL, "%s is listed by ibv_get_device_list", argv[1]);
	if (!dev)
		tap_bail("no device %s", argv[1]);
	tap_ok(!strcmp(provider_of(dev), "metaroce"),
	       "%s is handled by libmetaroce (got %s)", argv[1],
	       provider_of(dev));

	ctx = ibv_open_device(dev);
	tap_ok(ctx != NULL, "ibv_open_device (%s)", ctx ? "" : strerror(errno));
	if (!ctx)
		tap_bail("cannot open %s", argv[1]);

	test_device(dev, ctx);
	test_port(dev, ctx);
	test_pd(dev, ctx);

	tap_ok(!ibv_close_device(ctx), "ibv_close_device");
	ibv_free_device_list(list);

	return tap_done();
}
