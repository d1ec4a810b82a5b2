/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER pass-through cache so other layers can be built and tested; the
 * segment cache (issue 3) replaces this file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cairn/bdev.h>
#include <cairn/cache.h>

struct cairn_cache {
	struct cairn_bdev *dev;
	struct cairn_cache_config cfg;
};

int cairn_cache_new(struct cairn_bdev *dev, const struct cairn_cache_config *cfg,
		    struct cairn_cache **out)
{
	struct cairn_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->dev = dev;
	if (cfg)
		c->cfg = *cfg;
	*out = c;
	return 0;
}

void cairn_cache_free(struct cairn_cache *c)
{
	if (!c)
		return;
	cairn_bdev_close(c->dev);
	free(c);
}

ssize_t cairn_cache_read(struct cairn_cache *c, void *buf, size_t len, uint64_t off,
			 const struct cairn_cache_hint *hint)
{
	(void)hint;
	return cairn_bdev_read(c->dev, buf, len, off);
}

void cairn_cache_prefetch(struct cairn_cache *c, uint64_t off, uint64_t len) { }
void cairn_cache_drain(struct cairn_cache *c) { }
void cairn_cache_get_stats(struct cairn_cache *c, struct cairn_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
}
struct cairn_bdev *cairn_cache_bdev(struct cairn_cache *c) { return c->dev; }
size_t cairn_cache_segment_size(const struct cairn_cache *c) { return 4096; }
