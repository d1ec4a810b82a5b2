/* SPDX-License-Identifier: MIT */
/* Umbrella header for libcairn. */
#ifndef CAIRN_CAIRN_H
#define CAIRN_CAIRN_H
#include <cairn/version.h>
#include <cairn/error.h>
#include <cairn/types.h>
#include <cairn/format.h>
#include <cairn/bdev.h>
#include <cairn/verify.h>
#include <cairn/cache.h>
#include <cairn/image.h>
#include <cairn/mkfs.h>
#include <cairn/extract.h>
#include <cairn/ramfs.h>
#include <cairn/ns.h>
#include <cairn/remote.h>
#include <cairn/stack.h>
/* Not here: <cairn/testing.h>, test hooks outside the stable API. */
#endif
