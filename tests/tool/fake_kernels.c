/* fake_kernels.c — a test program that plays a GPU backend: it emits KERNEL_DISPATCH records
 * through the SDK's backend interface (op_sdk_emit), so that the tool's kernel-name options
 * (-M mangled, -T truncated, demangled by default) can be checked without a GPU.
 * usage: tool_fake_kernels N [ranged]   (emits N dispatches of one kernel; with "ranged" each
 * inside a user-API range "step<i % 2>", for --kernel-rename, and the last one outside any) */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omniprof/gpu.h"
#include "omniprof/omniprof.h"
#include "omniprof/user.h"
#include "sdk/backend.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    int ranged = argc > 2 && !strcmp(argv[2], "ranged");
    omniprof_initialize();
    const char *mangled = op_sdk_intern("_Z6squareIfEvPT_i");
    const char *demangled = op_sdk_intern("void square<float>(float*, int)");
    int emitted = 0;
    for (int i = 0; i < n; i++) {
        char step[16];
        snprintf(step, sizeof step, "step%d", i % 2);
        bool in_range = ranged && i + 1 < n;
        if (in_range) omniprof_range_push(step);
        if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE)) {
            if (in_range) omniprof_range_pop();
            continue;
        }
        omniprof_buffer_tracing_kernel_dispatch_record_t r;
        memset(&r, 0, sizeof(r));
        r.size = sizeof(r);
        r.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
        r.operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
        omniprof_get_timestamp(&r.start_timestamp);
        r.end_timestamp = r.start_timestamp + 1000;
        r.kernel_id = 7;
        r.dispatch_id = (uint64_t)i + 1;
        r.kernel_name = mangled;
        r.kernel_name_demangled = demangled;
        r.grid_size = (omniprof_dim3_t){4, 1, 1};
        r.block_size = (omniprof_dim3_t){256, 1, 1};
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE, &r, NULL);
        if (in_range) omniprof_range_pop();
        emitted++;
    }
    printf("emitted %d\n", emitted);
    return 0;
}
