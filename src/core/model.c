/* model.c -- the data-model tables of DESIGN.md.  Every table also has a
 * `report` column (report index, i32) that the trace adds; `dur` columns are
 * stop - start, derived by the trace. */
#include <string.h>

#include "core/model.h"

#define COL(n, t) {n, t, 0}
#define TIME(n) {n, NSL_I64, 1}
#define END {NULL, 0, 0}

static const nsl_model_column kernels[] = {
    COL("pid", NSL_I32), COL("device", NSL_I32), COL("context", NSL_I32), COL("stream", NSL_I32),
    COL("corr", NSL_I64), TIME("start"), TIME("stop"), COL("dur", NSL_I64),
    COL("name", NSL_STR), COL("demangled", NSL_STR), COL("mangled", NSL_STR),
    COL("grid_x", NSL_I32), COL("grid_y", NSL_I32), COL("grid_z", NSL_I32),
    COL("block_x", NSL_I32), COL("block_y", NSL_I32), COL("block_z", NSL_I32),
    COL("regs", NSL_I32), COL("smem_static", NSL_I32), COL("smem_dynamic", NSL_I32),
    COL("launch_type", NSL_I32), COL("graph_node", NSL_I64), COL("graph_id", NSL_I64), END};

static const nsl_model_column memcpy_cols[] = {
    COL("pid", NSL_I32), COL("device", NSL_I32), COL("context", NSL_I32), COL("stream", NSL_I32),
    COL("corr", NSL_I64), TIME("start"), TIME("stop"), COL("dur", NSL_I64), COL("bytes", NSL_I64),
    COL("kind", NSL_STR), COL("src_kind", NSL_STR), COL("dst_kind", NSL_STR),
    COL("src_device", NSL_I32), COL("dst_device", NSL_I32), COL("graph_node", NSL_I64), END};

static const nsl_model_column memset_cols[] = {
    COL("pid", NSL_I32), COL("device", NSL_I32), COL("context", NSL_I32), COL("stream", NSL_I32),
    COL("corr", NSL_I64), TIME("start"), TIME("stop"), COL("dur", NSL_I64), COL("bytes", NSL_I64),
    COL("kind", NSL_STR), COL("value", NSL_I32), COL("graph_node", NSL_I64), END};

static const nsl_model_column api[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), COL("corr", NSL_I64), TIME("start"), TIME("stop"),
    COL("dur", NSL_I64), COL("name", NSL_STR), COL("ret", NSL_I32), COL("callchain", NSL_I64),
    COL("source", NSL_STR) /* "runtime" or "driver" */, END};

static const nsl_model_column nvtx[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), TIME("start"), TIME("stop"), COL("dur", NSL_I64),
    COL("text", NSL_STR), COL("domain", NSL_STR), COL("kind", NSL_STR) /* push_pop, start_end, mark */,
    COL("category", NSL_I32), COL("color", NSL_I64), COL("range_id", NSL_I64),
    COL("end_tid", NSL_I32), END};

static const nsl_model_column sync[] = {
    COL("pid", NSL_I32), COL("device", NSL_I32), COL("context", NSL_I32), COL("stream", NSL_I32),
    COL("corr", NSL_I64), TIME("start"), TIME("stop"), COL("dur", NSL_I64), COL("kind", NSL_STR),
    COL("event", NSL_I64), END};

static const nsl_model_column osrt[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), TIME("start"), TIME("stop"), COL("dur", NSL_I64),
    COL("name", NSL_STR), COL("ret", NSL_I64), COL("callchain", NSL_I64), END};

static const nsl_model_column memory[] = {
    COL("pid", NSL_I32), COL("device", NSL_I32), COL("stream", NSL_I32), COL("corr", NSL_I64),
    TIME("start"), COL("address", NSL_I64), COL("bytes", NSL_I64), COL("op", NSL_STR) /* alloc, free */,
    COL("kind", NSL_STR), COL("pool_address", NSL_I64), END};

/* CUPTI's overhead records (CUPTI_ACTIVITY_KIND_OVERHEAD): time the CUDA driver
 * spent loading modules, loading functions lazily and JIT-compiling PTX, and
 * the profiler's own overhead; kind is the overhead type. */
static const nsl_model_column overhead[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), COL("corr", NSL_I64), TIME("start"), TIME("stop"),
    COL("dur", NSL_I64), COL("name", NSL_STR), COL("kind", NSL_STR), END};

static const nsl_model_column samples[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), TIME("time"), COL("stack", NSL_I64), COL("cpu", NSL_I32), END};

static const nsl_model_column frames[] = {
    COL("stack", NSL_I64), COL("depth", NSL_I32), COL("symbol", NSL_STR), COL("module", NSL_STR), END};

static const nsl_model_column devices[] = {
    COL("device", NSL_I32), COL("name", NSL_STR), COL("sm_count", NSL_I32), COL("memory", NSL_I64),
    COL("bandwidth", NSL_I64), COL("clock", NSL_I64), COL("compute_capability", NSL_STR),
    COL("bus", NSL_STR), COL("uuid", NSL_STR), END};

static const nsl_model_column processes[] = {COL("pid", NSL_I32), COL("name", NSL_STR), END};

static const nsl_model_column threads[] = {COL("pid", NSL_I32), COL("tid", NSL_I32), COL("name", NSL_STR), END};

/* NVTX ranges projected onto the GPU timeline (nsys-jax's nvtx_gpu_proj_trace):
 * start/stop are the projected times, orig_* the host range's own. */
static const nsl_model_column gpu_ranges[] = {
    COL("pid", NSL_I32), COL("tid", NSL_I32), COL("device", NSL_I32), TIME("start"), TIME("stop"),
    COL("dur", NSL_I64), COL("text", NSL_STR), COL("level", NSL_I32), COL("range_id", NSL_I64),
    COL("parent_id", NSL_I64), TIME("orig_start"), TIME("orig_stop"), COL("orig_dur", NSL_I64),
    COL("num_gpu_ops", NSL_I64), COL("num_child", NSL_I32), END};

/* Rows of `nsys stats` summary reports read from their CSV files (one row
 * per row of cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_api_sum,
 * osrt_sum, nvtx_sum); kind is the report's name.  Exports have none. */
static const nsl_model_column sums[] = {
    COL("kind", NSL_STR), COL("name", NSL_STR), COL("style", NSL_STR), COL("count", NSL_I64), COL("total", NSL_I64),
    COL("avg", NSL_F64), COL("med", NSL_F64), COL("min", NSL_I64), COL("max", NSL_I64), COL("std", NSL_F64),
    COL("pct", NSL_F64), END};

static const nsl_model_table tables[] = {
    {"kernels", kernels}, {"memcpy", memcpy_cols}, {"memset", memset_cols}, {"api", api},
    {"nvtx", nvtx},       {"sync", sync},          {"osrt", osrt},          {"memory", memory},
    {"overhead", overhead},
    {"samples", samples}, {"frames", frames},       /* CPU sampling call stacks */
    {"callchains", frames}, /* CUDA API call stacks (CUDA_CALLCHAINS), same shape as frames */
    {"devices", devices}, {"processes", processes}, {"threads", threads},
    {"gpu_ranges", gpu_ranges}, {"sums", sums}, {NULL, NULL}};

static const char *const table_names[] = {"reports", "kernels", "memcpy", "memset", "api", "nvtx",
                                          "sync", "osrt", "memory", "overhead", "samples", "frames", "callchains",
                                          "devices", "processes", "threads", "gpu_ranges", "sums", NULL};

const char *const *nsl_model_tables(void) { return table_names; }

const nsl_model_table *nsl__model_table(const char *name) {
  for (const nsl_model_table *t = tables; t->name; t++)
    if (strcmp(t->name, name) == 0) return t;
  return NULL;
}

const nsl_model_column *nsl__model_column(const nsl_model_table *t, const char *name) {
  for (const nsl_model_column *c = t->cols; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}
