/* "value|default" (engines/lib/pick.c): the value, the default when the
 * value is empty, and "" for what the parsers must refuse. */
#include <string.h>

#include "check.h"
#include "pick.h"

int main(void)
{
	char buf[8];

	CHECK(!strcmp(mdfio_pick("12", buf, sizeof(buf)), "12"), "no '|': the text itself");
	CHECK(!strcmp(mdfio_pick("12|1000", buf, sizeof(buf)), "12"), "a value before '|'");
	CHECK(!strcmp(mdfio_pick("|1000", buf, sizeof(buf)), "1000"), "nothing before '|': the default");
	CHECK(!strcmp(mdfio_pick("|", buf, sizeof(buf)), ""), "no value and no default");
	CHECK(!strcmp(mdfio_pick("1|2|3", buf, sizeof(buf)), "1"), "the value stops at the first '|'");
	CHECK(!strcmp(mdfio_pick("0000000005|1", buf, sizeof(buf)), ""),
	      "a value longer than the buffer is refused whole, not cut to 0000000");
	CHECK(!strcmp(mdfio_pick("1234567|1", buf, sizeof(buf)), "1234567"), "a value that just fits");
	CHECK(!strcmp(mdfio_pick(NULL, buf, sizeof(buf)), ""), "an option not given");
	return check_result();
}
