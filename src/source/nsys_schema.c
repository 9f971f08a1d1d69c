/* nsys_schema.c -- which nsys tables and columns make each data-model table,
 * for every export schema from nsys 2020.3 to today: the declarative
 * description that nsys_sqlite.c turns into one SELECT per load.  To add a
 * table: declare its columns (col_map: the model name, how the value is
 * read, the candidate nsys columns) and add a table_map to nsl__nsys_maps;
 * the model's own list of tables and columns is src/core/model.c.
 *
 * Choices (where the export leaves room):
 * - nvtx: event types 59 (push_pop), 60 (start_end), 34 (mark) only; text is
 *   `text`, else StringIds[textId]; domain is the name its domain-create event
 *   (type 75) gave, NULL for the default domain 0 and for unnamed ids; a mark's
 *   stop is NULL as nsys writes it (so its dur is NULL: a mark is an instant).
 * - api.name drops a "_vNNNN" suffix ("cudaLaunchKernel_v7000" ->
 *   "cudaLaunchKernel"), as nsys's reports do; api.source is "runtime"/"driver".
 * - Enums (memcpy kind, memory kinds, sync kind, memory op) use the export's
 *   ENUM_* table when present, else nsys's values; the model's short forms
 *   (HtoD, DtoH, DtoD, PtoP, pageable, pinned, device, stream_sync, alloc,
 *   free, ...); a value with no name becomes its number as text.
 * - overhead: CUPTI_ACTIVITY_KIND_OVERHEAD, kind from overheadType (module_loading,
 *   lazy_loading, driver_jit, buffer_flush, ...), name from nameId.
 * - devices: the first GPU table with rows (TARGET_INFO_GPU by id, 2021.2+;
 *   TARGET_INFO_CUDA_GPU / TARGET_INFO_GPU by deviceId, 2020; then
 *   TARGET_INFO_CUDA_DEVICE by gpuId), else the distinct deviceId of the
 *   activity tables with unknown names.
 * - processes: PROCESSES; in exports before it existed, one per pid of
 *   ThreadNames, named after its main thread.
 * - host is the profiled machine (TARGET_INFO_SYSTEM_ENV Hostname), else the
 *   machine that ran the export (EXPORT_HOST). */
#include <stddef.h>

#include "source/nsys_schema.h"

static const enum_item memcpy_kinds[] = {
    {0, "UNKNOWN", "unknown"},   {1, "HTOD", "HtoD"},         {2, "DTOH", "DtoH"},
    {3, "HTOA", "HtoA"},         {4, "ATOH", "AtoH"},         {5, "ATOA", "AtoA"},
    {6, "ATOD", "AtoD"},         {7, "DTOA", "DtoA"},         {8, "DTOD", "DtoD"},
    {9, "HTOH", "HtoH"},         {10, "PTOP", "PtoP"},        {11, "UVM_HTOD", "UVM_HtoD"},
    {12, "UVM_DTOH", "UVM_DtoH"}, {13, "UVM_DTOD", "UVM_DtoD"}, {0, NULL, NULL}};
/* nsys's own memory-kind enum (CUDA_MEMOPR_MEMORY_KIND), not CUPTI's. */
static const enum_item mem_kinds[] = {
    {0, "PAGEABLE", "pageable"}, {1, "PINNED", "pinned"},
    {2, "DEVICE", "device"},     {3, "ARRAY", "array"},
    {4, "MANAGED", "managed"},   {5, "DEVICE_STATIC", "device_static"},
    {6, "MANAGED_STATIC", "managed_static"}, {7, "UNKNOWN", "unknown"}, {0, NULL, NULL}};
static const enum_item sync_kinds[] = {
    {0, "UNKNOWN", "unknown"},
    {1, "EVENT_SYNCHRONIZE", "event_sync"},
    {2, "STREAM_WAIT_EVENT", "stream_wait_event"},
    {3, "STREAM_SYNCHRONIZE", "stream_sync"},
    {4, "CONTEXT_SYNCHRONIZE", "context_sync"},
    {0, NULL, NULL}};
static const enum_item mem_ops[] = {{0, "ALLOCATION", "alloc"}, {1, "DEALLOCATION", "free"}, {0, NULL, NULL}};
static const enum_item overhead_kinds[] = {
    {0, "UNDEFINED", "undefined"},
    {1, "UNKNOWN", "unknown"},
    {2, "DRIVER_COMPILER", "driver_jit"},
    {3, "CUPTI_BUFFER_FLUSH", "buffer_flush"},
    {4, "CUPTI_INSTRUMENTATION", "instrumentation"},
    {5, "CUPTI_RESOURCE", "resource"},
    {6, "RUNTIME_TRIGGERED_MODULE_LOADING", "module_loading"},
    {7, "LAZY_FUNCTION_LOADING", "lazy_loading"},
    {8, "COMMAND_BUFFER_FULL", "command_buffer_full"},
    {0, NULL, NULL}};

static const enum_def en_memcpy = {"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_", memcpy_kinds};
static const enum_def en_memkind = {"ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_", mem_kinds};
static const enum_def en_sync = {"ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_", sync_kinds};
static const enum_def en_memop = {"ENUM_CUDA_DEV_MEM_EVENT_OPER", "CUDA_DEV_MEM_EVENT_OPR_", mem_ops};
static const enum_def en_overhead = {"ENUM_CUPTI_OVERHEAD_TYPE", "OVERHEAD_", overhead_kinds};

#define C1(m, k, a) {m, k, {a, NULL}, NULL, 0}
#define C2(m, k, a, b) {m, k, {a, b, NULL}, NULL, 0}
#define CE(m, a, e) {m, M_ENUM, {a, NULL}, e, 0}
/* A column every version of its nsys table has had (the times of an event):
 * its absence means a damaged or hand-edited export, never an older schema. */
#define CREQ(m, a) {m, M_INT, {a, NULL}, NULL, 1}
#define CEND {NULL, M_INT, {NULL}, NULL, 0}
#define GPU_ACTIVITY_COMMON                                                                        \
  C1("pid", M_PID, "globalPid"), C1("device", M_INT, "deviceId"), C1("context", M_INT, "contextId"), \
      C1("stream", M_INT, "streamId"), C1("corr", M_INT, "correlationId"), CREQ("start", "start"), \
      CREQ("stop", "end")

static const col_map kernel_cols[] = {
    GPU_ACTIVITY_COMMON,
    C2("name", M_STR, "shortName", "demangledName"),
    C1("demangled", M_STR, "demangledName"),
    C1("mangled", M_STR, "mangledName"),
    C1("grid_x", M_INT, "gridX"),
    C1("grid_y", M_INT, "gridY"),
    C1("grid_z", M_INT, "gridZ"),
    C1("block_x", M_INT, "blockX"),
    C1("block_y", M_INT, "blockY"),
    C1("block_z", M_INT, "blockZ"),
    C1("regs", M_INT, "registersPerThread"),
    C1("smem_static", M_INT, "staticSharedMemory"),
    C1("smem_dynamic", M_INT, "dynamicSharedMemory"),
    C1("launch_type", M_INT, "launchType"),
    C1("graph_node", M_INT, "graphNodeId"),
    C1("graph_id", M_INT, "graphId"),
    CEND};

static const col_map memcpy_cols[] = {
    GPU_ACTIVITY_COMMON,
    C1("bytes", M_INT, "bytes"),
    CE("kind", "copyKind", &en_memcpy),
    CE("src_kind", "srcKind", &en_memkind),
    CE("dst_kind", "dstKind", &en_memkind),
    C1("src_device", M_INT, "srcDeviceId"),
    C1("dst_device", M_INT, "dstDeviceId"),
    C1("graph_node", M_INT, "graphNodeId"),
    CEND};

static const col_map memset_cols[] = {
    GPU_ACTIVITY_COMMON,
    C1("bytes", M_INT, "bytes"),
    CE("kind", "memKind", &en_memkind),
    C1("value", M_INT, "value"),
    C1("graph_node", M_INT, "graphNodeId"),
    CEND};

static const col_map api_cols[] = {
    C1("pid", M_PID, "globalTid"), C1("tid", M_TID, "globalTid"),  C1("corr", M_INT, "correlationId"),
    CREQ("start", "start"),        CREQ("stop", "end"),             C1("name", M_API_NAME, "nameId"),
    C1("ret", M_INT, "returnValue"), C1("callchain", M_INT, "callchainId"),
    {"source", M_SOURCE, {NULL}, NULL, 0}, CEND};

static const col_map nvtx_cols[] = {
    C1("pid", M_PID, "globalTid"),
    C1("tid", M_TID, "globalTid"),
    CREQ("start", "start"),
    CREQ("stop", "end"),
    C2("text", M_NVTX_TEXT, "text", "textId"),
    C1("domain", M_NVTX_DOMAIN, "domainId"),
    C1("kind", M_NVTX_KIND, "eventType"),
    C1("category", M_INT, "category"),
    C1("color", M_INT, "color"),
    C1("range_id", M_INT, "rangeId"),
    C1("end_tid", M_TID, "endGlobalTid"),
    CEND};

/* syncType; deprecatedSyncType appeared next to it in 2025 and is NULL there. */
static const col_map sync_cols[] = {
    GPU_ACTIVITY_COMMON,
    {"kind", M_ENUM, {"syncType", "deprecatedSyncType", NULL}, &en_sync, 0},
    C1("event", M_INT, "eventId"),
    CEND};

static const col_map osrt_cols[] = {
    C1("pid", M_PID, "globalTid"), C1("tid", M_TID, "globalTid"), CREQ("start", "start"),
    CREQ("stop", "end"),           C1("name", M_STR, "nameId"),    C1("ret", M_INT, "returnValue"),
    C1("callchain", M_INT, "callchainId"), CEND};

static const col_map memory_cols[] = {
    C1("pid", M_PID, "globalPid"),
    C1("device", M_INT, "deviceId"),
    C1("stream", M_INT, "streamId"),
    C1("corr", M_INT, "correlationId"),
    CREQ("start", "start"),
    C1("address", M_INT, "address"),
    C1("bytes", M_INT, "bytes"),
    CE("op", "memoryOperationType", &en_memop),
    CE("kind", "memKind", &en_memkind),
    C2("pool_address", M_INT, "localMemoryPoolAddress", "memoryPoolAddress"),
    CEND};

static const col_map overhead_cols[] = {
    C1("pid", M_PID, "globalTid"), C1("tid", M_TID, "globalTid"), C1("corr", M_INT, "correlationId"),
    CREQ("start", "start"),        CREQ("stop", "end"),             C1("name", M_STR, "nameId"),
    CE("kind", "overheadType", &en_overhead), CEND};

static const col_map sample_cols[] = {
    C1("pid", M_PID, "globalTid"), C1("tid", M_TID, "globalTid"), CREQ("time", "start"),
    C1("stack", M_INT, "id"),      C1("cpu", M_INT, "cpu"),         CEND};

static const col_map frame_cols[] = {
    C1("stack", M_INT, "id"), C1("depth", M_INT, "stackDepth"), C1("symbol", M_STR, "symbol"),
    C1("module", M_STR, "module"), CEND};

/* 2021.2+: the 41-column TARGET_INFO_GPU keyed by `id`. */
static const col_map gpu_cols[] = {
    C1("device", M_INT, "id"),
    C1("name", M_TEXT, "name"),
    C1("sm_count", M_INT, "smCount"),
    C1("memory", M_INT, "totalMemory"),
    C1("bandwidth", M_INT, "memoryBandwidth"),
    C1("clock", M_INT, "clockRate"),
    C2("compute_capability", M_CC, "computeMajor", "computeMinor"),
    C1("bus", M_TEXT, "busLocation"),
    C1("uuid", M_TEXT, "uuid"),
    CEND};

/* 2020 to early 2021: TARGET_INFO_CUDA_GPU keyed by deviceId (CUDA device
 * properties); names picked among those CUDA and nsys used over time. */
static const col_map cuda_gpu_cols[] = {
    C2("device", M_INT, "deviceId", "id"),
    C1("name", M_TEXT, "name"),
    C2("sm_count", M_INT, "numMultiprocessors", "smCount"),
    {"memory", M_INT, {"totalGlobalMem", "globalMemorySize", "totalMemory", NULL}, NULL, 0},
    C2("bandwidth", M_INT, "globalMemoryBandwidth", "memoryBandwidth"),
    C2("clock", M_INT, "coreClockRate", "clockRate"),
    C2("compute_capability", M_CC, "computeCapabilityMajor", "computeCapabilityMinor"),
    C2("bus", M_TEXT, "busLocation", "pciBusId"),
    C1("uuid", M_TEXT, "uuid"),
    CEND};

/* 2020: TARGET_INFO_GPU keyed by deviceId, when TARGET_INFO_CUDA_GPU is absent. */
static const col_map gpu2020_cols[] = {
    C1("device", M_INT, "deviceId"),
    C1("name", M_TEXT, "name"),
    C2("sm_count", M_INT, "smCount", "numMultiprocessors"),
    C1("memory", M_INT, "totalMemory"),
    C1("bandwidth", M_INT, "memoryBandwidth"),
    C1("clock", M_INT, "clockRate"),
    C2("compute_capability", M_CC, "computeMajor", "computeMinor"),
    C1("bus", M_TEXT, "busLocation"),
    C1("uuid", M_TEXT, "uuid"),
    CEND};

/* 2025.1+ exports may carry only TARGET_INFO_CUDA_DEVICE (one row per process
 * and device). */
static const col_map cuda_device_cols[] = {
    C1("device", M_INT, "gpuId"), C1("sm_count", M_INT, "numMultiprocessors"), C1("uuid", M_TEXT, "uuid"),
    CEND};

/* No GPU table at all: the devices the activity tables name (names unknown). */
static const col_map activity_device_cols[] = {C1("device", M_INT, "deviceId"), CEND};

static const col_map process_cols[] = {C1("pid", M_PID, "globalPid"), C1("name", M_TEXT, "name"), CEND};
static const col_map thread_process_cols[] = {C1("pid", M_PID, "globalTid"), C1("name", M_STR, "nameId"), CEND};
static const col_map thread_cols[] = {C1("pid", M_PID, "globalTid"), C1("tid", M_TID, "globalTid"),
                                      C1("name", M_STR, "nameId"), CEND};

#define KERNEL "CUPTI_ACTIVITY_KIND_KERNEL"
#define MEMCPY "CUPTI_ACTIVITY_KIND_MEMCPY"
#define MEMSET "CUPTI_ACTIVITY_KIND_MEMSET"
#define SYNC "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
#define NVTX_RANGE_TYPES "\"eventType\" IN (34, 59, 60)"   /* nsys_scan.c's nvtx_kind_of's types */

/* Alternatives per model table, in order of preference: the first of which
 * the export has a source table (with require_col) is used. */
const table_map nsl__nsys_maps[] = {
    {"kernels", {KERNEL}, {NULL}, NULL, NULL, NULL, 0, 0, kernel_cols, NULL},
    {"memcpy", {MEMCPY}, {NULL}, NULL, NULL, NULL, 0, 0, memcpy_cols, NULL},
    {"memset", {MEMSET}, {NULL}, NULL, NULL, NULL, 0, 0, memset_cols, NULL},
    {"api", {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}, {"runtime", "driver"}, NULL, NULL,
     NULL, 0, 0, api_cols, NULL},
    {"nvtx", {"NVTX_EVENTS"}, {NULL}, NULL, NVTX_RANGE_TYPES, NULL, 0, 0, nvtx_cols, NULL},
    {"sync", {SYNC}, {NULL}, NULL, NULL, NULL, 0, 0, sync_cols, NULL},
    {"osrt", {"OSRT_API"}, {NULL}, NULL, NULL, NULL, 0, 0, osrt_cols, NULL},
    {"memory", {"CUDA_GPU_MEMORY_USAGE_EVENTS"}, {NULL}, NULL, NULL, NULL, 0, 0, memory_cols, NULL},
    {"overhead", {"CUPTI_ACTIVITY_KIND_OVERHEAD"}, {NULL}, NULL, NULL, NULL, 0, 0, overhead_cols, NULL},
    {"samples", {"COMPOSITE_EVENTS"}, {NULL}, NULL, NULL, NULL, 0, 0, sample_cols, NULL},
    {"frames", {"SAMPLING_CALLCHAINS"}, {NULL}, NULL, NULL, NULL, 0, 0, frame_cols, NULL},
    {"callchains", {"CUDA_CALLCHAINS"}, {NULL}, NULL, NULL, NULL, 0, 0, frame_cols, NULL},
    {"devices", {"TARGET_INFO_GPU"}, {NULL}, "id", NULL, NULL, 0, 1, gpu_cols, NULL},
    {"devices", {"TARGET_INFO_CUDA_GPU"}, {NULL}, NULL, NULL, NULL, 0, 1, cuda_gpu_cols, NULL},
    {"devices", {"TARGET_INFO_GPU"}, {NULL}, "deviceId", NULL, NULL, 0, 1, gpu2020_cols, NULL},
    {"devices", {"TARGET_INFO_CUDA_DEVICE"}, {NULL}, "gpuId", NULL, "\"gpuId\"", 0, 1, cuda_device_cols, NULL},
    /* devices seen in the activity: distinct over deviceId whichever columns are asked for (the extra
     * column), so that every column has one row per device */
    {"devices", {KERNEL, MEMCPY, MEMSET, SYNC}, {NULL}, NULL, NULL, NULL, 1, 0, activity_device_cols, "\"deviceId\""},
    {"processes", {"PROCESSES"}, {NULL}, NULL, NULL, NULL, 0, 0, process_cols, NULL},
    /* before PROCESSES existed (2021 and older): one per pid of ThreadNames,
     * named after its main thread (tid = pid) when it has one; SQLite takes
     * the bare columns from the row of the min() */
    {"processes", {"ThreadNames"}, {NULL}, NULL, NULL, "(\"globalTid\" >> 24) & 16777215", 0, 0, thread_process_cols,
     "min(abs((\"globalTid\" & 16777215) - ((\"globalTid\" >> 24) & 16777215)))"},
    {"threads", {"ThreadNames"}, {NULL}, NULL, NULL, NULL, 0, 0, thread_cols, NULL},
    {NULL, {NULL}, {NULL}, NULL, NULL, NULL, 0, 0, NULL, NULL}};

/* Tables whose presence marks an nsys export (beside StringIds). */
const char *const nsl__nsys_markers[] = {
    "META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_GPU", "ThreadNames", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS", "OSRT_API", "COMPOSITE_EVENTS", "ANALYSIS_DETAILS", NULL};

