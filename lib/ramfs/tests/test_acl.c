/* SPDX-License-Identifier: MIT */
/* POSIX ACLs in the RAM fs, against what tmpfs does: the mode and the access ACL
 * kept in step both ways, equivalent ACLs not stored, default ACLs inherited on
 * create with the umask ignored, and the error cases. */
#include <sys/xattr.h>
#include "helpers.h"

#define ACC "system.posix_acl_access"
#define DEF "system.posix_acl_default"

/* An ACL in the xattr format: version 2, then (tag, perm, id) entries. */
struct acl { unsigned char b[4 + 8 * 8]; size_t len; };

static void acl_init(struct acl *a)
{
	memset(a, 0, sizeof(*a));
	a->b[0] = 2;
	a->len = 4;
}

static void acl_add(struct acl *a, unsigned tag, unsigned perm, uint32_t id)
{
	unsigned char *p = a->b + a->len;

	p[0] = (unsigned char)tag;
	p[2] = (unsigned char)perm;
	memcpy(p + 4, &id, 4);
	a->len += 8;
}

/* user::rwx user:1000:rwx group::r-x mask::MASK other::OTHER */
static void acl_named(struct acl *a, unsigned mask, unsigned other)
{
	acl_init(a);
	acl_add(a, 0x01, 7, UINT32_MAX);
	acl_add(a, 0x02, 7, 1000);
	acl_add(a, 0x04, 5, UINT32_MAX);
	acl_add(a, 0x10, mask, UINT32_MAX);
	acl_add(a, 0x20, other, UINT32_MAX);
}

static uint32_t mode_of(struct cairn_ramfs *fs, cairn_ino_t ino)
{
	struct cairn_stat st;

	assert_int_equal(cairn_ramfs_getattr(fs, ino, &st), 0);
	return st.mode & 07777;
}

static unsigned perm_at(const unsigned char *v, size_t entry)
{
	return v[4 + entry * 8 + 2];
}

static void test_access_acl_and_mode(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t f = t_file(fs, cairn_ramfs_root(fs), "f", 0600);
	struct cairn_setattr sa = { .valid = CAIRN_SET_MODE, .mode = 0751 };
	struct acl a;
	unsigned char v[128];

	(void)state;
	/* setfacl: the mask becomes the group bits, user:: and other:: theirs */
	acl_named(&a, 6, 4);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, ACC, a.b, a.len, 0), 0);
	assert_int_equal(mode_of(fs, f), 0764);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, ACC, v, sizeof(v)), (ssize_t)a.len);
	/* chmod: the mask follows the group bits, the named entry stays */
	assert_int_equal(cairn_ramfs_setattr(fs, f, &sa, NULL, NULL), 0);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, ACC, v, sizeof(v)), (ssize_t)a.len);
	assert_int_equal(perm_at(v, 0), 7);
	assert_int_equal(perm_at(v, 1), 7);
	assert_int_equal(perm_at(v, 3), 5);
	assert_int_equal(perm_at(v, 4), 1);
	/* an ACL the mode says all of is not stored, but sets the mode */
	acl_init(&a);
	acl_add(&a, 0x01, 6, UINT32_MAX);
	acl_add(&a, 0x04, 4, UINT32_MAX);
	acl_add(&a, 0x20, 0, UINT32_MAX);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, ACC, a.b, a.len, 0), 0);
	assert_int_equal(mode_of(fs, f), 0640);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, ACC, v, sizeof(v)), -ENODATA);
	/* malformed: no mask with a named entry, bad perms, no other:: */
	acl_init(&a);
	acl_add(&a, 0x01, 7, UINT32_MAX);
	acl_add(&a, 0x02, 7, 1000);
	acl_add(&a, 0x04, 5, UINT32_MAX);
	acl_add(&a, 0x20, 0, UINT32_MAX);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, ACC, a.b, a.len, 0), -EINVAL);
	acl_named(&a, 9, 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, ACC, a.b, a.len, 0), -EINVAL);
	/* a default ACL only on directories */
	acl_named(&a, 7, 0);
	assert_int_equal(cairn_ramfs_setxattr(fs, f, DEF, a.b, a.len, 0), -EACCES);
	assert_int_equal(cairn_ramfs_getxattr(fs, f, DEF, v, sizeof(v)), -ENODATA);
	cairn_ramfs_free(fs);
}

static void test_default_acl_inherited(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	struct cairn_cred user = { 1000, 1000, 077 };
	struct cairn_stat d, f, g, sub;
	struct acl a;
	unsigned char v[128];

	(void)state;
	assert_int_equal(cairn_ramfs_mkdir(fs, cairn_ramfs_root(fs), "d", 1, 0755, NULL, &d), 0);
	acl_named(&a, 7, 5);
	assert_int_equal(cairn_ramfs_setxattr(fs, d.ino, DEF, a.b, a.len, 0), 0);
	/* the umask (077) is ignored: the default ACL masks the mode instead */
	assert_int_equal(cairn_ramfs_mknod(fs, d.ino, "f", 1, S_IFREG | 0666, 0, &user, &f), 0);
	assert_int_equal(f.mode & 0777, 0664);
	assert_int_equal(cairn_ramfs_getxattr(fs, f.ino, ACC, v, sizeof(v)), (ssize_t)a.len);
	assert_int_equal(perm_at(v, 0), 6); /* user:: masked by the mode's owner bits */
	assert_int_equal(perm_at(v, 3), 6); /* the mask by its group bits */
	assert_int_equal(perm_at(v, 4), 4);
	assert_int_equal(cairn_ramfs_getxattr(fs, f.ino, DEF, v, sizeof(v)), -ENODATA);
	/* a directory inherits the default ACL itself too */
	assert_int_equal(cairn_ramfs_mkdir(fs, d.ino, "s", 1, 0777, &user, &sub), 0);
	assert_int_equal(sub.mode & 0777, 0775);
	assert_int_equal(cairn_ramfs_getxattr(fs, sub.ino, DEF, v, sizeof(v)), (ssize_t)a.len);
	/* without a default ACL the umask applies; a NULL cred is an exact copy */
	assert_int_equal(cairn_ramfs_mknod(fs, cairn_ramfs_root(fs), "g", 1, S_IFREG | 0666, 0,
					   &user, &g), 0);
	assert_int_equal(g.mode & 0777, 0600);
	assert_int_equal(cairn_ramfs_mknod(fs, d.ino, "copy", 4, S_IFREG | 0640, 0, NULL, &g), 0);
	assert_int_equal(g.mode & 0777, 0640);
	assert_int_equal(cairn_ramfs_getxattr(fs, g.ino, ACC, v, sizeof(v)), -ENODATA);
	cairn_ramfs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_acl_and_mode),
		cmocka_unit_test(test_default_acl_inherited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
