/* SPDX-License-Identifier: MIT */
/* cairn_ramfs_readdir_alloc: a directory read whole or in pages of max entries,
 * resumed from each last entry's cookie, with every name once. */
#include "helpers.h"

static void test_pages(void **state)
{
	struct cairn_ramfs *fs = t_new(0, 0);
	cairn_ino_t root = cairn_ramfs_root(fs), d = t_dir(fs, root, "d"), f;
	struct cairn_dirent *e;
	unsigned char seen[300] = { 0 };
	uint64_t cookie = 0;
	size_t total = 0;
	ssize_t n;
	char name[16];

	(void)state;
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		t_file(fs, d, name, 0644);
	}
	/* whole: no "." or "..", creation order, NUL-terminated names */
	n = cairn_ramfs_readdir_alloc(fs, d, 0, 0, &e);
	assert_int_equal(n, 300);
	assert_string_equal(e[0].name, "f000");
	assert_int_equal(e[0].name_len, 4);
	assert_int_equal(e[0].dtype, DT_REG);
	assert_string_equal(e[299].name, "f299");
	free(e);
	/* in pages of 128, each resumed from the page's last cookie */
	do {
		n = cairn_ramfs_readdir_alloc(fs, d, cookie, 128, &e);
		assert_true(n >= 0 && n <= 128);
		for (ssize_t i = 0; i < n; i++) {
			int k = atoi(e[i].name + 1);

			assert_int_equal(seen[k]++, 0);
			total++;
		}
		if (n)
			cookie = e[n - 1].next;
		free(e);
	} while (n == 128);
	assert_int_equal(total, 300);
	/* empty: 0 and no allocation; a file is no directory */
	n = cairn_ramfs_readdir_alloc(fs, root, 0, 0, &e);
	assert_int_equal(n, 1);
	assert_string_equal(e[0].name, "d");
	free(e);
	f = t_dir(fs, root, "empty");
	assert_int_equal(cairn_ramfs_readdir_alloc(fs, f, 0, 0, &e), 0);
	assert_null(e);
	f = t_file(fs, root, "file", 0644);
	assert_int_equal(cairn_ramfs_readdir_alloc(fs, f, 0, 0, &e), -ENOTDIR);
	assert_null(e);
	cairn_ramfs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
