/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <cairn/error.h>

const char *cairn_strerror(int err)
{
	if (err == -CAIRN_ECORRUPT)
		return "corrupt image";
	if (err == -CAIRN_ENOTIMAGE)
		return "not a cairn image";
	if (err == -CAIRN_EDIGEST)
		return "data does not match the image digest";
	return strerror(err < 0 ? -err : err);
}
