/* cuda_cubins.c — the loaded cubins (GPU code images) and what an instruction of one is: its
 * source file and line (CUPTI's SASS-to-source correlation; needs -lineinfo) and its SASS text
 * (cuda_sass.c, nvdisasm). Shared by PC sampling (cupti_pcsampling.c) and SASS metrics
 * (cupti_sassmetrics.c), which both name instructions by (cubin CRC, function, PC offset).
 *
 * The cubins come from the MODULE_LOADED resource callback (pointer, size, CRC) and are
 * forgotten at MODULE_UNLOAD_STARTING; the samplers read their data before an unload (their
 * resource handlers run first). Lookups are cached per (CRC, function, PC).
 * Invariants: (1) a cubin pointer is used only while its module is loaded; (2) everything here
 * is under g_lock, which callers may take while holding their own lock (sampler lock > g_lock),
 * never the other way round. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_pcsampling.h>

#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/u64map.h"

#define MAX_CUBINS 1024

typedef struct cubin {
    uint64_t crc;
    const void *data;
    size_t size;
} cubin;

typedef struct code_info {
    const char *file;
    uint32_t line;
} code_info;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cubin g_cubins[MAX_CUBINS];
static int g_n;
static op_u64map g_lines; /* hash(crc, function, pc) -> index into g_tab + 1 */
static code_info *g_tab;
static size_t g_ntab, g_cap;

/* SASS metrics name a cubin by a 32-bit CRC (CUpti_SassMetrics_Data.cubinCrc), PC sampling by
 * cuptiGetCubinCrc's 64 bits: a CRC that fits 32 bits also matches the low half. */
static cubin *find_locked(uint64_t crc)
{
    for (int i = 0; i < g_n; i++)
        if (g_cubins[i].data && (g_cubins[i].crc == crc || (crc <= UINT32_MAX && (uint32_t)g_cubins[i].crc == crc)))
            return &g_cubins[i];
    return NULL;
}

void op_cuda_cubins_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    if (cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED && cbid != CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) return;
    const CUpti_ModuleResourceData *m = rd ? (const CUpti_ModuleResourceData *)rd->resourceDescriptor : NULL;
    if (!m || !m->pCubin || !m->cubinSize) return;
    CUpti_GetCubinCrcParams cp;
    memset(&cp, 0, sizeof cp);
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubin = m->pCubin;
    cp.cubinSize = m->cubinSize;
    if (cuptiGetCubinCrc(&cp) != CUPTI_SUCCESS) return;
    pthread_mutex_lock(&g_lock);
    cubin *c = find_locked(cp.cubinCrc);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        if (!c) {
            for (int i = 0; i < g_n && !c; i++)
                if (!g_cubins[i].data) c = &g_cubins[i]; /* a slot an unloaded module left */
            if (!c && g_n < MAX_CUBINS) c = &g_cubins[g_n++];
        }
        if (c) c->crc = cp.cubinCrc, c->data = m->pCubin, c->size = m->cubinSize;
    } else if (c) {
        c->data = NULL; /* invariant (1) */
    }
    pthread_mutex_unlock(&g_lock);
}

static code_info line_locked(uint64_t crc, uint32_t fidx, const char *fname, uint64_t pc)
{
    uint64_t key = op_hash64x3(crc, fidx, pc), v;
    code_info out = {"", 0};
    if (op_u64map_get(&g_lines, key, &v)) return g_tab[v - 1];
    cubin *cb = find_locked(crc);
    if (cb && fname) {
        CUpti_GetSassToSourceCorrelationParams p;
        memset(&p, 0, sizeof p);
        p.size = CUpti_GetSassToSourceCorrelationParamsSize;
        p.cubin = cb->data;
        p.cubinSize = cb->size;
        p.functionName = fname;
        p.pcOffset = pc;
        if (cuptiGetSassToSourceCorrelation(&p) == CUPTI_SUCCESS && p.fileName) {
            char path[1024];
            if (p.dirName && p.dirName[0] && p.fileName[0] != '/')
                snprintf(path, sizeof path, "%s/%s", p.dirName, p.fileName);
            else
                snprintf(path, sizeof path, "%s", p.fileName);
            out.file = op_sdk_intern(path);
            out.line = p.lineNumber;
        }
        free(p.fileName);
        free(p.dirName);
    }
    if (g_ntab == g_cap) {
        size_t ncap = g_cap ? g_cap * 2 : 1024;
        code_info *n = op_realloc(g_tab, ncap * sizeof *n);
        if (!n) return out;
        g_tab = n, g_cap = ncap;
    }
    g_tab[g_ntab++] = out;
    op_u64map_put(&g_lines, key, g_ntab);
    return out;
}

void op_cuda_code_at(uint64_t crc, uint32_t fidx, const char *fname, uint64_t pc, const char **file, uint32_t *line,
                     const char **sass)
{
    pthread_mutex_lock(&g_lock);
    code_info ci = line_locked(crc, fidx, fname, pc);
    *file = ci.file;
    *line = ci.line;
    if (sass) {
        cubin *cb = find_locked(crc);
        *sass = op_cuda_sass_text(crc, cb ? cb->data : NULL, cb ? cb->size : 0, fname, pc);
    }
    pthread_mutex_unlock(&g_lock);
}
