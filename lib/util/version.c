/* SPDX-License-Identifier: MIT */
#include <cairn/version.h>

const char *cairn_version(void)
{
	return CAIRN_VERSION_STRING;
}
