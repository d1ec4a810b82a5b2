/* SPDX-License-Identifier: MIT */
/*
 * FUSE_HANDLE_KILLPRIV_V2 for libfuse 3.14, which cannot ask for it.
 *
 * Without it the kernel never marks FUSE inodes S_NOSEC, so every write(2) first
 * costs a GETXATTR "security.capability" round trip (file_remove_privs()). With
 * it the kernel sets SB_NOSEC, asks once per inode, and leaves clearing
 * set-user-ID, set-group-ID and security.capability on write, truncate and chown
 * to the daemon: the namespace applies those rules itself, for every caller
 * (cairn_ns_write, cairn_ns_setattr, cairn_ns_open in cairn/ns.h).
 *
 * The session's I/O goes through these two hooks: read() notes the kernel's INIT
 * request (its id and whether it offers the flag), writev() adds the flag to the
 * INIT reply.
 *
 * The same hook gives libfuse 3.14 O_TMPFILE, which it has no handler for (it
 * would answer ENOSYS, and the kernel would give up on O_TMPFILE). FUSE_TMPFILE
 * carries what FUSE_CREATE does and wants the same reply, for a name no file can
 * have ("/"): read() turns it into a CREATE, and the create handler makes a
 * file without a name when it sees that one (fuse_ops.c). Every other message
 * passes through untouched.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "daemon.h"

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
	struct daemon *cf = userdata;
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header *h = buf;

	if (n >= (ssize_t)sizeof(*h) && h->opcode == FUSE_TMPFILE)
		h->opcode = FUSE_CREATE;
	if (n >= (ssize_t)(sizeof(*h) + 4 * sizeof(uint32_t)) && h->opcode == FUSE_INIT) {
		const struct fuse_init_in *in = (const void *)(h + 1);

		if (in->flags & FUSE_HANDLE_KILLPRIV_V2)
			__atomic_store_n(&cf->init_unique, h->unique, __ATOMIC_RELEASE);
	}
	return n;
}

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct daemon *cf = userdata;
	uint64_t init = __atomic_load_n(&cf->init_unique, __ATOMIC_ACQUIRE);
	const struct fuse_out_header *h = iov[0].iov_base;
	struct iovec mine[2];
	unsigned char out[512];
	uint32_t flags;

	/* The INIT reply: header and fuse_init_out, as libfuse sends it. */
	if (!init || count != 2 || iov[0].iov_len != sizeof(*h) || h->unique != init ||
	    h->error != 0 || iov[1].iov_len < 4 * sizeof(uint32_t) ||
	    iov[1].iov_len > sizeof(out))
		return writev(fd, iov, count);
	memcpy(out, iov[1].iov_base, iov[1].iov_len);
	memcpy(&flags, out + offsetof(struct fuse_init_out, flags), sizeof(flags));
	flags |= FUSE_HANDLE_KILLPRIV_V2;
	memcpy(out + offsetof(struct fuse_init_out, flags), &flags, sizeof(flags));
	mine[0] = iov[0];
	mine[1].iov_base = out;
	mine[1].iov_len = iov[1].iov_len;
	__atomic_store_n(&cf->init_unique, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cf->killpriv_v2, 1, __ATOMIC_RELEASE);
	return writev(fd, mine, 2);
}

int daemon_killpriv_v2(struct daemon *cf)
{
	static const struct fuse_custom_io io = { .writev = kp_writev, .read = kp_read };

	/* The same /dev/fuse descriptor, now read and written through the hooks. */
	return fuse_session_custom_io(cf->se, &io, fuse_session_fd(cf->se));
}
