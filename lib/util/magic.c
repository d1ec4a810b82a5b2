/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include <cairn/error.h>
#include <cairn/format.h>
#include "util/util_int.h"

/* Formats a user may hand cairn by mistake, by the magic they start with (or
 * carry at a fixed offset: EROFS and ext* put theirs after a 1 KiB boot area). */
static const struct {
	size_t off, len;
	const char *magic, *what;
} kinds[] = {
	{ 0, 4, "hsqs", "a squashfs image" },
	{ 1024, 4, "\xe2\xe1\xf5\xe0", "an EROFS image" },
	{ 1080, 2, "\x53\xef", "an ext2/3/4 file system" },
	{ 0, 4, "\x7f" "ELF", "an ELF file" },
	{ 0, 2, "\x1f\x8b", "a gzip file" },
	{ 0, 4, "\x28\xb5\x2f\xfd", "a zstd file" },
	{ 0, 6, "\xfd" "7zXZ\0", "an xz file" },
	{ 0, 4, "PK\3\4", "a zip file" },
	{ 257, 5, "ustar", "a tar archive" },
};

static const char *guess_kind(const uint8_t *head, size_t n)
{
	size_t zero = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (n >= kinds[i].off + kinds[i].len &&
		    !memcmp(head + kinds[i].off, kinds[i].magic, kinds[i].len))
			return kinds[i].what;
	while (zero < n && !head[zero])
		zero++;
	return zero == n ? "all zero bytes" : NULL;
}

int util_not_cairn(const uint8_t *head, size_t n, char *why, size_t why_len)
{
	const char *kind = guess_kind(head, n);
	char found[3 * 8 + 1] = "";

	if (!why || !why_len)
		return -CAIRN_ENOTIMAGE;
	if (!n) {
		snprintf(why, why_len, "the file is empty (0 bytes)");
		return -CAIRN_ENOTIMAGE;
	}
	for (size_t i = 0, o = 0; i < 8 && i < n; i++)
		o += (size_t)snprintf(found + o, sizeof(found) - o, "%s%02x", i ? " " : "", head[i]);
	snprintf(why, why_len, "expected the magic 43 41 49 52 4e 00 00 00 (\"CAIRN\") at byte 0,"
		 " found %s%s%s", found, kind ? ": " : "", kind ? kind : "");
	return -CAIRN_ENOTIMAGE;
}

int util_too_short(const uint8_t *head, size_t n, uint64_t size, char *why, size_t why_len)
{
	if (!n || memcmp(head, CAIRN_MAGIC_BYTES, n < 8 ? n : 8))
		return util_not_cairn(head, n, why, why_len);
	if (why && why_len)
		snprintf(why, why_len, "too short for a superblock (%llu bytes)",
			 (unsigned long long)size);
	return -CAIRN_ECORRUPT;
}
