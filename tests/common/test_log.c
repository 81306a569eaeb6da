/* test_log.c — log levels, the prefix, errno preservation, the callback and level parsing. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "common/log.h"

static char g_line[2048];
static int g_calls;
static void capture(op_log_level level, const char *line, void *data)
{
    (void)level;
    (void)data;
    g_calls++;
    strncpy(g_line, line, sizeof(g_line) - 1);
}

int main(void)
{
    CHECK(op_log_parse_level("TRACE") == OP_LOG_TRACE);
    CHECK(op_log_parse_level("warning") == OP_LOG_WARNING);
    CHECK(op_log_parse_level("nonsense") == -1);
    CHECK(op_log_parse_level(NULL) == -1);

    op_log_set_callback(capture, NULL);
    op_log_set_level(OP_LOG_WARNING);
    op_info("hidden %d", 1);
    CHECK(g_calls == 0);
    errno = EAGAIN;
    op_error("buffer %s failed: %d", "b1", 42);
    CHECK(errno == EAGAIN);
    CHECK(g_calls == 1);
    CHECK(strcmp(g_line, "omniprof: buffer b1 failed: 42\n") == 0);

    /* A very long message is cut, still newline-terminated. */
    char big[4000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    op_error("%s", big);
    size_t n = strlen(g_line);
    CHECK(n < 1024 && g_line[n - 1] == '\n');
    op_log_set_callback(NULL, NULL);
    return CHECK_DONE();
}
