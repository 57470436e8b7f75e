/* An S3 client's configuration, as the AWS CLI and SDKs find theirs
 * (awsconf.h). */
#include "awsconf.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

int mdfio_aws_ini_get(const char *path, const char *section, const char *key,
		      char *out, size_t out_len)
{
	FILE *f = fopen(path, "re");
	char line[8192];
	int in = 0, ret = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		char *s, *eq;

		if (line[0] == ' ' || line[0] == '\t')
			continue;	/* a sub-section's setting ("s3 =") */
		s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (end) {
				*end = 0;
				in = !strcmp(trim(s + 1), section);
			}
			continue;
		}
		eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		*eq = 0;
		if (strcmp(trim(s), key))
			continue;
		s = trim(eq + 1);
		if (strlen(s) >= out_len)
			ret = -ENAMETOOLONG;
		else {
			strcpy(out, s);
			ret = 1;
		}
	}
	fclose(f);
	return ret;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int given(const char *s)
{
	return s && *s;
}

/* s into out (out_len bytes): 0, or 1 with why in err */
static int take(char *out, size_t out_len, const char *s, const char *what,
		char *err, size_t err_len)
{
	if (strlen(s) >= out_len) {
		snprintf(err, err_len, "%s is longer than %zu bytes", what, out_len - 1);
		return 1;
	}
	strcpy(out, s);
	return 0;
}

/* The file the environment variable names, else ~/.aws/<name>. */
static void aws_file(char *out, size_t len, const char *var, const char *name)
{
	const char *home = env("HOME");

	if (env(var)) {
		snprintf(out, len, "%s", env(var));
		return;
	}
	if (!home) {
		const struct passwd *pw = getpwuid(getuid());

		home = pw ? pw->pw_dir : "/";
	}
	snprintf(out, len, "%s/.aws/%s", home, name);
}

/* key of the profile: its section of the credentials file (if creds),
 * then of the config file ("[profile P]", "[default]"). 1 found, 0 not,
 * or 1 with why in err and err set non-empty. from: the file it came
 * from. */
static int profile_get(const char *profile, const char *key, int creds, char *out,
		       size_t out_len, char *from, size_t from_len, char *err, size_t err_len)
{
	char path[MDFIO_AWS_TEXT_MAX], section[MDFIO_AWS_KEY_MAX + 16];
	int r;

	if (creds) {
		aws_file(path, sizeof(path), "AWS_SHARED_CREDENTIALS_FILE", "credentials");
		r = mdfio_aws_ini_get(path, profile, key, out, out_len);
		if (r < 0) {
			snprintf(err, err_len, "%s: cannot read %s of profile %s: %s", path, key, profile,
				 strerror(-r));
			return 1;
		}
		if (r) {
			snprintf(from, from_len, "%s", path);
			return 1;
		}
	}
	aws_file(path, sizeof(path), "AWS_CONFIG_FILE", "config");
	if (strcmp(profile, "default"))
		snprintf(section, sizeof(section), "profile %s", profile);
	else
		snprintf(section, sizeof(section), "default");
	r = mdfio_aws_ini_get(path, section, key, out, out_len);
	if (r < 0) {
		snprintf(err, err_len, "%s: cannot read %s of profile %s: %s", path, key, profile,
			 strerror(-r));
		return 1;
	}
	if (r)
		snprintf(from, from_len, "%s", path);
	return r;
}

int mdfio_aws_resolve(struct mdfio_aws *a, const struct mdfio_aws_options *o,
		      char *err, size_t err_len)
{
	char from[MDFIO_AWS_TEXT_MAX], from2[MDFIO_AWS_TEXT_MAX];
	const char *profile = given(o->profile) ? o->profile : env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
	const char *v;

	memset(a, 0, sizeof(*a));
	err[0] = 0;
	/* credentials: an explicit profile= leaves the environment's keys
	 * out, as the AWS CLI's --profile does */
	if (!given(o->profile) && env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
		if (take(a->access_key, sizeof(a->access_key), env("AWS_ACCESS_KEY_ID"), "AWS_ACCESS_KEY_ID", err, err_len) ||
		    take(a->secret_key, sizeof(a->secret_key), env("AWS_SECRET_ACCESS_KEY"), "AWS_SECRET_ACCESS_KEY", err, err_len))
			return 1;
		v = env("AWS_SESSION_TOKEN");
		if (v && take(a->session_token, sizeof(a->session_token), v, "AWS_SESSION_TOKEN", err, err_len))
			return 1;
		snprintf(a->credentials_from, sizeof(a->credentials_from), "the environment");
	} else {
		if (!profile_get(profile, "aws_access_key_id", 1, a->access_key, sizeof(a->access_key),
				 from, sizeof(from), err, err_len)) {
			snprintf(err, err_len, "no credentials: neither AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment%s nor aws_access_key_id in profile %s of the credentials or config file",
				 given(o->profile) ? " (not used with profile=)" : "", profile);
			return 1;
		}
		if (err[0])
			return 1;
		if (!profile_get(profile, "aws_secret_access_key", 1, a->secret_key, sizeof(a->secret_key),
				 from2, sizeof(from2), err, err_len)) {
			snprintf(err, err_len, "profile %s of %s has aws_access_key_id but no aws_secret_access_key",
				 profile, from);
			return 1;
		}
		if (err[0])
			return 1;
		profile_get(profile, "aws_session_token", 1, a->session_token, sizeof(a->session_token),
			    from2, sizeof(from2), err, err_len);
		if (err[0])
			return 1;
		snprintf(a->credentials_from, sizeof(a->credentials_from), "profile %s of %s", profile, from);
	}
	/* region */
	if (given(o->region))
		v = o->region;
	else if (env("AWS_REGION"))
		v = env("AWS_REGION");
	else if (env("AWS_DEFAULT_REGION"))
		v = env("AWS_DEFAULT_REGION");
	else if (profile_get(profile, "region", 0, a->region, sizeof(a->region), from, sizeof(from), err, err_len))
		v = err[0] ? NULL : a->region;
	else
		v = "us-east-1";
	if (!v || (v != a->region && take(a->region, sizeof(a->region), v, "the region", err, err_len)))
		return 1;
	/* endpoint */
	if (given(o->endpoint))
		v = o->endpoint;
	else if (env("AWS_ENDPOINT_URL_S3"))
		v = env("AWS_ENDPOINT_URL_S3");
	else if (env("AWS_ENDPOINT_URL"))
		v = env("AWS_ENDPOINT_URL");
	else if (profile_get(profile, "endpoint_url", 0, a->endpoint, sizeof(a->endpoint), from, sizeof(from), err, err_len))
		v = err[0] ? NULL : a->endpoint;
	else {
		snprintf(a->endpoint, sizeof(a->endpoint), "https://s3.%s.amazonaws.com", a->region);
		v = a->endpoint;
	}
	if (!v || (v != a->endpoint && take(a->endpoint, sizeof(a->endpoint), v, "the endpoint", err, err_len)))
		return 1;
	/* CA bundle */
	if (given(o->ca_bundle))
		v = o->ca_bundle;
	else if (env("AWS_CA_BUNDLE"))
		v = env("AWS_CA_BUNDLE");
	else if (profile_get(profile, "ca_bundle", 0, a->ca_bundle, sizeof(a->ca_bundle), from, sizeof(from), err, err_len))
		v = err[0] ? NULL : a->ca_bundle;
	else
		v = "";
	if (!v || (v != a->ca_bundle && take(a->ca_bundle, sizeof(a->ca_bundle), v, "ca_bundle", err, err_len)))
		return 1;
	return 0;
}
