/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <cairn/error.h>

const char *cairn_strerror(int err)
{
	if (err == -CAIRN_ECORRUPT)
		return "corrupt image";
	return strerror(err < 0 ? -err : err);
}
