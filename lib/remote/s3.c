/* SPDX-License-Identifier: MIT */
/*
 * s3://BUCKET/KEY -> an http origin signed with SigV4 (libcurl signs; we only
 * find the endpoint, region and credentials the way the AWS tools do: options,
 * then the environment, then the shared credentials file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cairn/remote.h>

struct creds {
	char id[256], secret[256], token[2048];
};

static const char *first(const char *a, const char *env1, const char *env2)
{
	const char *v;

	if (a && *a)
		return a;
	v = env1 ? getenv(env1) : NULL;
	if (v && *v)
		return v;
	v = env2 ? getenv(env2) : NULL;
	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* The [profile] section of an INI-style credentials file. */
static void read_credentials(const char *profile, struct creds *c)
{
	const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
	char path[4096], line[4096];
	int in = 0;
	FILE *f;

	if (file && *file)
		snprintf(path, sizeof(path), "%s", file);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.aws/credentials", home);
	else
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *l = trim(line), *eq;

		if (*l == '[') {
			char *end = strchr(l, ']');

			if (end)
				*end = '\0';
			in = !strcmp(trim(l + 1), profile);
			continue;
		}
		eq = strchr(l, '=');
		if (!in || !eq)
			continue;
		*eq = '\0';
		if (!strcmp(trim(l), "aws_access_key_id"))
			snprintf(c->id, sizeof(c->id), "%s", trim(eq + 1));
		else if (!strcmp(trim(l), "aws_secret_access_key"))
			snprintf(c->secret, sizeof(c->secret), "%s", trim(eq + 1));
		else if (!strcmp(trim(l), "aws_session_token"))
			snprintf(c->token, sizeof(c->token), "%s", trim(eq + 1));
	}
	fclose(f);
}

static void find_credentials(const struct cairn_s3_config *cfg, struct creds *c)
{
	const char *id = first(cfg ? cfg->access_key : NULL, "AWS_ACCESS_KEY_ID", NULL);
	const char *secret = first(cfg ? cfg->secret_key : NULL, "AWS_SECRET_ACCESS_KEY", NULL);
	const char *token = first(cfg ? cfg->session_token : NULL, "AWS_SESSION_TOKEN", NULL);

	memset(c, 0, sizeof(*c));
	if (id && secret) {
		snprintf(c->id, sizeof(c->id), "%s", id);
		snprintf(c->secret, sizeof(c->secret), "%s", secret);
		if (token)
			snprintf(c->token, sizeof(c->token), "%s", token);
		return;
	}
	read_credentials(first(cfg ? cfg->profile : NULL, "AWS_PROFILE", NULL) ?: "default", c);
}

/* The key as SigV4's canonical URI spells it for S3, which is also what S3
 * decodes from the request path: every byte but the unreserved A-Z a-z 0-9
 * - . _ ~ and the '/' between segments becomes %XX (upper-case hex), once.
 * So a space is %20 (never '+', which S3 would read as a space), '+' is %2B,
 * '%' is %25 (s3://b/a%20b names the key "a%20b", as the AWS tools read it)
 * and UTF-8 goes byte by byte. out holds 3 * strlen(key) + 1. */
static void key_escape(const char *key, char *out)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		if ((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		    (*k >= '0' && *k <= '9') || strchr("-._~/", *k)) {
			*out++ = (char)*k;
			continue;
		}
		*out++ = '%';
		*out++ = hex[*k >> 4];
		*out++ = hex[*k & 15];
	}
	*out = '\0';
}

int cairn_s3_origin(const char *s3url, const struct cairn_s3_config *cfg,
		    struct cairn_http_origin *out, char **store)
{
	const char *bucket, *key, *endpoint, *region;
	size_t blen, need;
	struct creds c;
	char *p, *ekey;
	int n;

	*store = NULL;
	if (strncasecmp(s3url, "s3://", 5))
		return -EINVAL;
	bucket = s3url + 5;
	key = strchr(bucket, '/');
	if (!key || key == bucket || !key[1])
		return -EINVAL; /* s3://BUCKET/KEY, both non-empty */
	blen = (size_t)(key - bucket);
	key++;
	endpoint = first(cfg ? cfg->endpoint : NULL, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
	region = first(cfg ? cfg->region : NULL, "AWS_REGION", "AWS_DEFAULT_REGION") ?: "us-east-1";
	find_credentials(cfg, &c);
	need = strlen(s3url) + 3 * strlen(key) + (endpoint ? strlen(endpoint) : 0) +
	       2 * strlen(region) + sizeof(c) + 128;
	ekey = malloc(3 * strlen(key) + 1);
	p = *store = ekey ? malloc(need) : NULL;
	if (!p) {
		free(ekey);
		return -ENOMEM;
	}
	key_escape(key, ekey);
	memset(out, 0, sizeof(*out));
	out->url = p;
	if (endpoint)
		n = snprintf(p, need, "%s%s%.*s/%s", endpoint,
			     endpoint[strlen(endpoint) - 1] == '/' ? "" : "/", (int)blen, bucket, ekey);
	else
		n = snprintf(p, need, "https://%.*s.s3.%s.amazonaws.com/%s", (int)blen, bucket,
			     region, ekey);
	free(ekey);
	p += n + 1;
	need -= (size_t)n + 1;
	if (!c.id[0])
		return 0; /* a public bucket: plain unsigned GETs */
	out->aws_sigv4 = p;
	n = snprintf(p, need, "aws:amz:%s:s3", region);
	p += n + 1;
	need -= (size_t)n + 1;
	out->userpwd = p;
	n = snprintf(p, need, "%s:%s", c.id, c.secret);
	p += n + 1;
	need -= (size_t)n + 1;
	if (c.token[0]) {
		out->session_token = p;
		snprintf(p, need, "%s", c.token);
	}
	return 0;
}
