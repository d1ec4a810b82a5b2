/* SPDX-License-Identifier: MIT */
/*
 * craft: edits a cairn image in place to make hostile test images, then
 * recomputes every checksum (block checksums, csum_table_hash, super_hash) so
 * the reader gets past them and meets the bad structure itself. Used by
 * tests/cli/hostile*.sh.
 *
 *   craft fix IMAGE                          only recompute the checksums
 *   craft rename IMAGE OLD NEW               rewrite the bytes of every directory
 *                                            entry named OLD (NEW may be shorter:
 *                                            name_len is updated; never longer)
 *   craft super IMAGE FIELD VALUE            set a 64-bit superblock field
 *   craft inode IMAGE INO FIELD VALUE        set a field of inode INO
 *   craft find IMAGE NAME                    print the inode of entry NAME
 *
 * Self-contained on purpose (tests/progs are built without the library):
 * XXH3 comes from the xxhash header, inlined.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../fuzz/fixup.h"

struct field {
	const char *name;
	size_t off, size;
};

#define SF(f) { #f, offsetof(struct cairn_disk_super, f), sizeof(((struct cairn_disk_super *)0)->f) }
static const struct field super_fields[] = {
	SF(image_size), SF(inode_count), SF(root_ino), SF(meta_off), SF(meta_len),
	SF(inode_off), SF(dirent_off), SF(dirent_count), SF(xattr_off), SF(xattr_count),
	SF(extent_off), SF(extent_count), SF(blob_off), SF(blob_len), SF(csum_off),
	SF(data_off), SF(data_len), SF(hot_off), SF(hot_len), SF(compat), SF(incompat),
	SF(file_count), SF(data_bytes),
};

#define IF(f) { #f, offsetof(struct cairn_disk_inode, f), sizeof(((struct cairn_disk_inode *)0)->f) }
static const struct field inode_fields[] = {
	IF(mode), IF(flags), IF(nlink), IF(uid), IF(gid), IF(parent), IF(size),
	IF(xattr_count), IF(xattr_ref), IF(data_ref), IF(data_count), IF(alloc_blocks),
};

static uint8_t *img;
static size_t img_len;

static void die(const char *msg)
{
	fprintf(stderr, "craft: %s\n", msg);
	exit(1);
}

static uint64_t sb(size_t off)
{
	return fixup_get64(img + off);
}

static void set_field(uint8_t *base, const struct field *fs, size_t n, const char *name,
		      const char *val)
{
	unsigned long long v = strtoull(val, NULL, 0);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(fs[i].name, name))
			continue;
		if (fs[i].size == 8) {
			fixup_put64(base + fs[i].off, v);
		} else {
			uint32_t w = cairn_le32((uint32_t)v);

			memcpy(base + fs[i].off, &w, 4);
		}
		return;
	}
	die("unknown field");
}

static uint8_t *at(uint64_t off, uint64_t len)
{
	if (off > img_len || len > img_len - off)
		die("structure outside the image");
	return img + off;
}

/* Every directory entry named old: rewrite its name. Returns how many. */
static int rename_entries(const char *old, const char *new_name, int print_ino)
{
	uint64_t count = sb(offsetof(struct cairn_disk_super, dirent_count));
	uint64_t doff = sb(offsetof(struct cairn_disk_super, dirent_off));
	uint64_t blob = sb(offsetof(struct cairn_disk_super, blob_off));
	size_t olen = strlen(old), nlen = new_name ? strlen(new_name) : 0;
	int hits = 0;

	if (nlen > olen)
		die("the new name must not be longer than the old one");
	for (uint64_t i = 0; i < count; i++) {
		struct cairn_disk_dirent *d = (void *)at(doff + i * CAIRN_DIRENT_SIZE,
							 CAIRN_DIRENT_SIZE);
		uint8_t *name = at(blob + cairn_le64(d->name_ref), d->name_len);

		if (d->name_len != olen || memcmp(name, old, olen))
			continue;
		hits++;
		if (print_ino) {
			printf("%u\n", cairn_le32(d->ino));
			continue;
		}
		memcpy(name, new_name, nlen);
		d->name_len = (uint8_t)nlen;
	}
	return hits;
}

int main(int argc, char **argv)
{
	struct stat st;
	int fd, rc = 0;

	if (argc < 3)
		die("usage: craft fix|rename|super|inode|find IMAGE ...");
	fd = open(argv[2], O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		die("cannot open the image");
	img_len = (size_t)st.st_size;
	img = mmap(NULL, img_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (img == MAP_FAILED || img_len < CAIRN_BLOCK_SIZE)
		die("cannot map the image");
	/* Records are patched where the superblock says: not in compressed blocks. */
	if (strcmp(argv[1], "fix") && strcmp(argv[1], "super") &&
	    (cairn_le32(((const struct cairn_disk_super *)img)->incompat) & CAIRN_INCOMPAT_META_Z))
		die("compressed metadata: build the image with mkfs --plain-meta");
	if (!strcmp(argv[1], "fix") && argc == 3) {
		/* nothing but the checksums */
	} else if (!strcmp(argv[1], "rename") && argc == 5) {
		if (!rename_entries(argv[3], argv[4], 0))
			die("no entry has that name");
	} else if (!strcmp(argv[1], "find") && argc == 4) {
		rc = rename_entries(argv[3], NULL, 1) ? 0 : 1;
		goto out;
	} else if (!strcmp(argv[1], "super") && argc == 5) {
		set_field(img, super_fields, sizeof(super_fields) / sizeof(super_fields[0]),
			  argv[3], argv[4]);
	} else if (!strcmp(argv[1], "inode") && argc == 6) {
		uint64_t ino = strtoull(argv[3], NULL, 0);
		uint64_t ioff = sb(offsetof(struct cairn_disk_super, inode_off));

		set_field(at(ioff + ino * CAIRN_INODE_SIZE, CAIRN_INODE_SIZE), inode_fields,
			  sizeof(inode_fields) / sizeof(inode_fields[0]), argv[4], argv[5]);
	} else {
		die("bad command line");
	}
	cairn_fixup_checksums(img, img_len);
out:
	munmap(img, img_len);
	close(fd);
	return rc;
}
