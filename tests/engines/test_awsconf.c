/* An S3 client's configuration as the AWS CLI finds it (lib/awsconf.c):
 * the environment, the shared credentials and config files, the options,
 * and which wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "awsconf.h"
#include "check.h"

static const char *const vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
	"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE",
	"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

int main(void)
{
	char dir[] = "/tmp/mdfio-awsconf-XXXXXX", creds[64], config[64], err[512], out[64];
	struct mdfio_aws a;
	struct mdfio_aws_options none = { 0 }, prod = { .profile = "prod" };
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	if (!mkdtemp(dir))
		return 1;
	snprintf(creds, sizeof(creds), "%s/credentials", dir);
	snprintf(config, sizeof(config), "%s/config", dir);
	write_file(creds, "# keys\n[default]\naws_access_key_id = AKDEF\naws_secret_access_key = SKDEF\n\n"
		   "[prod]\naws_access_key_id=AKPROD\naws_secret_access_key= SKPROD \naws_session_token = TOK\n");
	write_file(config, "[default]\nregion = eu-west-1\ns3 =\n  endpoint_url = http://sub.section\n"
		   "[profile prod]\nregion = ap-south-1\nendpoint_url = http://prod.example:9000\n"
		   "ca_bundle = /etc/prod-ca.pem\n[prod]\nregion = not-a-profile\n"
		   "[profile cfgonly]\naws_access_key_id = AKCFG\naws_secret_access_key = SKCFG\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	setenv("AWS_CONFIG_FILE", config, 1);

	CHECK(mdfio_aws_ini_get(config, "default", "endpoint_url", out, sizeof(out)) == 0,
	      "a sub-section's setting is not the profile's");
	CHECK(mdfio_aws_ini_get(creds, "prod", "aws_secret_access_key", out, sizeof(out)) == 1 &&
	      !strcmp(out, "SKPROD"), "value trimmed: '%s'", out);
	CHECK(mdfio_aws_ini_get("/nonexistent/x", "prod", "k", out, sizeof(out)) == 0, "a missing file");
	CHECK(mdfio_aws_ini_get(creds, "prod", "aws_secret_access_key", out, 4) < 0, "too long for out");

	/* [default] of both files; the AWS default endpoint of its region */
	CHECK(!mdfio_aws_resolve(&a, &none, err, sizeof(err)), "default: %s", err);
	CHECK(!strcmp(a.access_key, "AKDEF") && !strcmp(a.secret_key, "SKDEF") && !a.session_token[0],
	      "default keys: %s", a.access_key);
	CHECK(!strcmp(a.region, "eu-west-1"), "default region: %s", a.region);
	CHECK(!strcmp(a.endpoint, "https://s3.eu-west-1.amazonaws.com"), "default endpoint: %s", a.endpoint);
	CHECK(!strncmp(a.credentials_from, "profile default of ", 19) && strstr(a.credentials_from, creds),
	      "from: %s", a.credentials_from);

	/* AWS_PROFILE: its section in each file ([profile P] in config) */
	setenv("AWS_PROFILE", "prod", 1);
	CHECK(!mdfio_aws_resolve(&a, &none, err, sizeof(err)), "AWS_PROFILE: %s", err);
	CHECK(!strcmp(a.access_key, "AKPROD") && !strcmp(a.session_token, "TOK"), "prod keys: %s", a.access_key);
	CHECK(!strcmp(a.region, "ap-south-1") && !strcmp(a.endpoint, "http://prod.example:9000") &&
	      !strcmp(a.ca_bundle, "/etc/prod-ca.pem"), "prod: %s %s %s", a.region, a.endpoint, a.ca_bundle);
	unsetenv("AWS_PROFILE");

	/* the environment's keys beat the files, and options beat all */
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
	setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
	setenv("AWS_ENDPOINT_URL", "http://all.services", 1);
	CHECK(!mdfio_aws_resolve(&a, &none, err, sizeof(err)), "env: %s", err);
	CHECK(!strcmp(a.access_key, "AKENV") && !strcmp(a.credentials_from, "the environment"),
	      "env keys: %s from %s", a.access_key, a.credentials_from);
	CHECK(!strcmp(a.region, "us-west-2") && !strcmp(a.endpoint, "http://all.services"),
	      "env: %s %s", a.region, a.endpoint);
	setenv("AWS_REGION", "eu-north-1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://s3.only", 1);
	CHECK(!mdfio_aws_resolve(&a, &none, err, sizeof(err)) && !strcmp(a.region, "eu-north-1") &&
	      !strcmp(a.endpoint, "http://s3.only"), "AWS_REGION, AWS_ENDPOINT_URL_S3: %s %s", a.region, a.endpoint);
	/* profile= leaves the environment's keys out (the CLI's --profile) */
	CHECK(!mdfio_aws_resolve(&a, &prod, err, sizeof(err)) && !strcmp(a.access_key, "AKPROD"),
	      "profile=prod: %s", a.access_key);
	{
		struct mdfio_aws_options all = { "cfgonly", "r-opt", "http://opt:1", "/opt/ca" };

		CHECK(!mdfio_aws_resolve(&a, &all, err, sizeof(err)), "options: %s", err);
		CHECK(!strcmp(a.access_key, "AKCFG") && strstr(a.credentials_from, config) &&
		      !strcmp(a.region, "r-opt") && !strcmp(a.endpoint, "http://opt:1") &&
		      !strcmp(a.ca_bundle, "/opt/ca"), "options: %s %s %s %s", a.access_key, a.region,
		      a.endpoint, a.ca_bundle);
	}

	/* nothing anywhere: one reason, which holds no value */
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_PROFILE", "nobody", 1);
	CHECK(mdfio_aws_resolve(&a, &none, err, sizeof(err)) == 1 && strstr(err, "no credentials") &&
	      strstr(err, "profile nobody") && !strstr(err, "SKENV"), "no credentials: %s", err);

	unlink(creds);
	unlink(config);
	rmdir(dir);
	return check_result();
}
