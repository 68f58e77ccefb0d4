/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The module version. dkms.conf's PACKAGE_VERSION must be the same string
 * (scripts/build-module.sh refuses to build when they differ), and so must
 * the version of debian/changelog (make deb refuses to build otherwise).
 */
#ifndef _METAROCE_VERSION_H
#define _METAROCE_VERSION_H

#define METAROCE_VERSION "0.1.0"

#endif /* _METAROCE_VERSION_H */
