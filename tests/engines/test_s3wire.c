/* mdfio-s3's text besides the objects (lib/s3wire.c): names, encoding,
 * the XML it reads, that nothing but an error's Code is taken from a
 * body, the names of datasets, and a claim's fields. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "s3wire.h"

int main(void)
{
	static const char page[] =
		"<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name><Prefix>p/0_0/</Prefix>"
		"<Contents><Key>p/0_0/</Key><Size>0</Size></Contents>"
		"<Contents><Key>p/0_0/file-1</Key></Contents>"
		"<Contents><Key>p/0_0/a&amp;b&lt;c&gt;&quot;&apos;&amp;amp;</Key></Contents>"
		"<IsTruncated>true</IsTruncated><NextContinuationToken>1/a+b=</NextContinuationToken>"
		"</ListBucketResult>";
	static const char denied[] =
		"<Error><Code>SignatureDoesNotMatch</Code><Message>x</Message>"
		"<StringToSign>AWS4 secret-ish</StringToSign></Error>";
	const char *at = page;
	char out[128], *k[4];
	int i, n = 0;

	CHECK(mdfio_s3_valid_bucket("abc") && mdfio_s3_valid_bucket("my.bucket-1"), "valid buckets");
	CHECK(!mdfio_s3_valid_bucket("ab") && !mdfio_s3_valid_bucket("Caps") && !mdfio_s3_valid_bucket("a_b") &&
	      !mdfio_s3_valid_bucket("0123456789012345678901234567890123456789012345678901234567890123"),
	      "invalid buckets");
	CHECK(mdfio_s3_valid_prefix("") && mdfio_s3_valid_prefix("run-1/a_b.c/"), "valid prefixes");
	CHECK(!mdfio_s3_valid_prefix("/abs") && !mdfio_s3_valid_prefix("a//b") && !mdfio_s3_valid_prefix("a b") &&
	      !mdfio_s3_valid_prefix("a%2F") && !mdfio_s3_valid_prefix("a?b"), "invalid prefixes");

	mdfio_s3_encode(out, "p/0_0/ a+b=~");
	CHECK(!strcmp(out, "p%2F0_0%2F%20a%2Bb%3D~"), "encoded: %s", out);

	while (n < 4 && (k[n] = mdfio_s3_element(at, sizeof(page) - 1 - (size_t)(at - page), "Key", &at)))
		n++;
	CHECK(n == 3, "3 keys: %d", n);
	CHECK(n == 3 && !strcmp(k[0], "p/0_0/") && !strcmp(k[1], "p/0_0/file-1") &&
	      !strcmp(k[2], "p/0_0/a&b<c>\"'&amp;"), "keys, entities undone once");
	for (i = 0; i < n; i++)
		free(k[i]);
	k[0] = mdfio_s3_element(page, sizeof(page) - 1, "NextContinuationToken", NULL);
	CHECK(k[0] && !strcmp(k[0], "1/a+b="), "token: %s", k[0] ? k[0] : "(none)");
	free(k[0]);
	CHECK(!mdfio_s3_element(page, sizeof(page) - 1, "Missing", NULL), "no such element");
	CHECK(!mdfio_s3_element("<Key>open", 9, "Key", NULL), "an element never closed");

	mdfio_s3_code(denied, sizeof(denied) - 1, out);
	CHECK(!strcmp(out, "SignatureDoesNotMatch"), "code: %s", out);
	mdfio_s3_code("<Code>Bad<script></Code>", 24, out);
	CHECK(!strcmp(out, "Bad"), "code's letters only: %s", out);
	mdfio_s3_code("<Code>Cut", 9, out);
	CHECK(!strcmp(out, "Cut"), "a body cut short: %s", out);
	mdfio_s3_code(NULL, 0, out);
	CHECK(!out[0], "no body: %s", out);

	{
		unsigned long r = 99, d = 99;

		CHECK(mdfio_s3_dataset_named("run/3_14/", "run/", '_', '/', &r, &d) && r == 3 && d == 14,
		      "a dataset's prefix: %lu %lu", r, d);
		CHECK(mdfio_s3_dataset_named("b-7-9", "b-", '-', 0, &r, &d) && r == 7 && d == 9,
		      "a dataset's bucket: %lu %lu", r, d);
		CHECK(!mdfio_s3_dataset_named("run/3_14/x", "run/", '_', '/', &r, &d) &&
		      !mdfio_s3_dataset_named("run/3_/", "run/", '_', '/', &r, &d) &&
		      !mdfio_s3_dataset_named("run/_1/", "run/", '_', '/', &r, &d) &&
		      !mdfio_s3_dataset_named("other/3_1/", "run/", '_', '/', &r, &d) &&
		      !mdfio_s3_dataset_named("b-7-9x", "b-", '-', 0, &r, &d) &&
		      !mdfio_s3_dataset_named("run/12345678901_0/", "run/", '_', '/', &r, &d),
		      "not a dataset's name");
	}
	{
		static const char claim[] = "mdfio-s3 namespace\nrun=job-42\nhost=node\x01" "7\ndirectory=/mnt/a; b\n";
		static const char older[] = "mdfio-s3 namespace; directory=/old/dir\n";

		mdfio_s3_claim_field(claim, sizeof(claim) - 1, "directory", out, sizeof(out));
		CHECK(!strcmp(out, "/mnt/a; b"), "directory: %s", out);
		mdfio_s3_claim_field(claim, sizeof(claim) - 1, "run", out, sizeof(out));
		CHECK(!strcmp(out, "job-42"), "run: %s", out);
		mdfio_s3_claim_field(claim, sizeof(claim) - 1, "host", out, sizeof(out));
		CHECK(!strcmp(out, "node?7"), "host, printable only: %s", out);
		mdfio_s3_claim_field(claim, sizeof(claim) - 1, "dir", out, sizeof(out));
		CHECK(!out[0], "no field dir: %s", out);
		mdfio_s3_claim_field(claim, sizeof(claim) - 1, "directory", out, 5);
		CHECK(!strcmp(out, "/mnt"), "cut to fit: %s", out);
		mdfio_s3_claim_field(older, sizeof(older) - 1, "directory", out, sizeof(out));
		CHECK(!strcmp(out, "/old/dir"), "an earlier build's claim: %s", out);
		mdfio_s3_claim_field(claim, 24, "run", out, sizeof(out));
		CHECK(!strcmp(out, "j"), "a body cut short: %s", out);
	}

	CHECK(mdfio_s3_status_errno(200) == 0 && mdfio_s3_status_errno(204) == 0, "2xx");
	CHECK(mdfio_s3_status_errno(404) == ENOENT && mdfio_s3_status_errno(412) == EEXIST &&
	      mdfio_s3_status_errno(403) == EACCES && mdfio_s3_status_errno(503) == EAGAIN &&
	      mdfio_s3_status_errno(500) == EIO, "errors");
	return check_result();
}
