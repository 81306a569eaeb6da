/* profile_gpu.h — the summary's sections on GPU sampling (profile_gpu.c): PC sampling stall
 * reasons and hot lines, SASS metrics per line, unified memory, PM sampling. Not exported. */
#ifndef OMNIPROF_OUTPUT_PROFILE_GPU_H
#define OMNIPROF_OUTPUT_PROFILE_GPU_H

#include <stdio.h>

#include "db/reader.h"

/* For op_output_summary (stats.c): the sections in the summary's format (OP_OUT_SUMMARY_*;
 * csv: left out) when the inputs hold GPU sampling rows inside window w (NULL: all);
 * *printed set to 1 when something was written. 0, OP_OUT_EFAIL or OP_OUT_EINPUT. */
int op_gpu_summary_section(const char *const *inputs, size_t n_inputs, const op_win *w, int format, FILE *out,
                           int *first_json, int *printed, char *err, size_t errlen);

#endif /* OMNIPROF_OUTPUT_PROFILE_GPU_H */
