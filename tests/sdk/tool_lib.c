/* tool_lib.c — a minimal tool library used by test_registration: built twice, as
 * libsdk_test_tool_linked.so (linked into the test, found through the link map) and as
 * libsdk_test_tool_env.so (found through OMNIPROF_TOOL_LIBRARIES). It reports each call to
 * the test program through `test_registration_note` (looked up with dlsym). */
#include <dlfcn.h>

#include "omniprof/omniprof.h"

typedef void (*note_fn)(const char *who, const char *what, uint32_t priority);
static uint32_t g_priority;
static omniprof_client_finalize_t g_fini;
static omniprof_client_id_t g_id;

static void note(const char *what)
{
    note_fn fn = (note_fn)dlsym(RTLD_DEFAULT, "test_registration_note");
    if (fn) fn(TOOL_NAME, what, g_priority);
}

static int init(omniprof_client_finalize_t fini, void *data)
{
    (void)data;
    g_fini = fini;
    note("initialize");
    return 0;
}
static void fini(void *data)
{
    (void)data;
    note("finalize");
}

/* lets the test ask for this tool's early finalization */
OMNIPROF_API void TOOL_FINALIZE_NOW(void)
{
    if (g_fini) g_fini(g_id);
}

omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t priority,
                                                     omniprof_client_id_t *id)
{
    (void)v;
    (void)rv;
    g_priority = priority;
    id->name = TOOL_NAME;
    g_id = *id;
    note("configure");
    static omniprof_tool_configure_result_t r = {sizeof r, init, fini, NULL};
    return &r;
}
