/* cupti_holder.c — a library that takes the process's CUPTI subscriber from its constructor, as
 * Nsight tools or torch.profiler would. Linked (DT_NEEDED) into the "held" test program, its
 * constructor runs before the preloaded omniprof tool's, so the CUDA backend finds CUPTI taken
 * and must say so in one line and stay off while the program runs normally. */
#include <stdio.h>
#include <string.h>
#include <cupti.h>

static void CUPTIAPI holder_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
    (void)u, (void)d, (void)id, (void)p;
}

__attribute__((constructor)) static void hold_cupti(void)
{
    CUpti_SubscriberHandle sub;
    CUpti_SubscriberParams sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    sp.subscriberName = "omniprof-test-holder";
    CUptiResult r = cuptiSubscribe_v2(&sub, holder_cb, NULL, &sp);
    if (r != CUPTI_SUCCESS) fprintf(stderr, "cupti_holder: cuptiSubscribe_v2 -> %d\n", (int)r);
}
