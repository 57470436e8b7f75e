/* Where an S3 client's credentials, region, endpoint and CA bundle come
 * from, as the AWS CLI and SDKs look for them: the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE,
 * AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * AWS_CA_BUNDLE) and the profile's sections of the shared credentials and
 * config files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, by default
 * ~/.aws/credentials and ~/.aws/config). No option ever holds a secret. */
#ifndef MDFIO_AWSCONF_H
#define MDFIO_AWSCONF_H

#include <stddef.h>

#define MDFIO_AWS_KEY_MAX 256
#define MDFIO_AWS_TOKEN_MAX 4096
#define MDFIO_AWS_TEXT_MAX 1024

struct mdfio_aws {
	char access_key[MDFIO_AWS_KEY_MAX];
	char secret_key[MDFIO_AWS_KEY_MAX];
	char session_token[MDFIO_AWS_TOKEN_MAX];	/* "": none */
	char region[MDFIO_AWS_KEY_MAX];
	char endpoint[MDFIO_AWS_TEXT_MAX];
	char ca_bundle[MDFIO_AWS_TEXT_MAX];	/* "": the system's */
	/* where the credentials came from, for messages: "the environment",
	 * "profile prod of /root/.aws/credentials" (never a value) */
	char credentials_from[MDFIO_AWS_TEXT_MAX + MDFIO_AWS_KEY_MAX + 16];
};

/* The options that win over everything else (NULL or "": not given). */
struct mdfio_aws_options {
	const char *profile, *region, *endpoint, *ca_bundle;
};

/* Resolves a from the options, the environment and the files:
 * credentials: profile option > environment keys > AWS_PROFILE's (or
 * [default]) section of the credentials file, then of the config file;
 * region: option > AWS_REGION > AWS_DEFAULT_REGION > the profile's
 * region > us-east-1; endpoint: option > AWS_ENDPOINT_URL_S3 >
 * AWS_ENDPOINT_URL > the profile's endpoint_url >
 * https://s3.<region>.amazonaws.com; CA bundle: option > AWS_CA_BUNDLE >
 * the profile's ca_bundle. 0, or 1 with why (no value in it) in err. */
int mdfio_aws_resolve(struct mdfio_aws *a, const struct mdfio_aws_options *o,
		      char *err, size_t err_len);

/* The value of key in section of the INI file path into out: 1 found, 0
 * not (nor the file), minus an errno value if it cannot be read or the
 * value does not fit. Sections are "[name]"; "key = value" lines; lines
 * that start with blanks (a sub-section's settings) and comments (# ;)
 * are skipped. */
int mdfio_aws_ini_get(const char *path, const char *section, const char *key,
		      char *out, size_t out_len);

#endif
