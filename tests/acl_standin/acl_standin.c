/* A stand-in libascendcl.so for the tests: the AscendCL calls pyasc binds, over host memory.
 *
 * Device memory is host memory this library allocates and records; every address given to
 * a copy, a launch or a free is checked against that table (a host pointer where a device
 * pointer belongs is ACL_ERROR_INVALID_PARAM).  aclrtBinaryLoadFromData accepts the shared
 * library the ascend-sim build produces for a kernel (written to a temporary file and
 * dlopen'ed); aclrtBinaryGetFunction finds pyasc_sim_launch_<name> and
 * pyasc_sim_signature_<name>, and refuses a kernel whose core type (pyasc_sim_core_<name>:
 * "vector" or "cube") does not match the binary magic its object was loaded with (a real
 * NPU would run it on the wrong core type); aclrtLaunchKernelWithHostArgs unpacks the host argument block
 * by that signature (8-aligned device addresses, scalars at their C size and alignment,
 * total padded to 8), checks each address is a live allocation, passes its size and runs
 * every block.  A kernel failure is reported, as on hardware, by the next synchronize.
 *
 * Environment: PYASC_ACL_STANDIN_SOC (default Ascend910B1), PYASC_ACL_STANDIN_DEVICES
 * (default 1), PYASC_ACL_STANDIN_FAIL=<call>[:N][,<call>[:N]...]: the N-th call (default the
 * first) of each named function after the variable changed fails with an error code and a
 * recent error message.  pyasc_standin_stats() reports live resources for leak checks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int aclError;
#define API __attribute__((visibility("default")))

enum {
  OK = 0, INVALID_PARAM = 100000, UNINITIALIZE = 100001, REPEAT_INITIALIZE = 100002,
  RT_PARAM_INVALID = 107000, RT_INVALID_DEVICEID = 107001, RT_CONTEXT_NULL = 107002,
  RT_INVALID_HANDLE = 107017, RT_FEATURE_NOT_SUPPORT = 207000, RT_MEMORY_ALLOCATION = 207001,
  RT_INTERNAL_ERROR = 507000, RT_KERNEL_LOOKUP = 507027, RT_VECTOR_CORE_EXCEPTION = 507035,
};
enum { MAGIC_AICORE = 0x43554245, MAGIC_VECTOR = 0x41415246, MAGIC_CUBE = 0x41494343 };

typedef union { uint32_t isLazyLoad; uint32_t magic; int32_t cpuKernelMode; uint32_t rsv[4]; } OptValue;
typedef struct { int type; OptValue value; } Opt;
typedef struct { Opt* options; size_t numOpt; } Opts;
_Static_assert(sizeof(OptValue) == 16 && sizeof(Opt) == 20 && sizeof(Opts) == 16, "ACL layouts");

typedef int (*SimLaunch)(uint32_t, void**, const uint64_t*, uint64_t*, char*, size_t, void* const*);
typedef const char* (*SimSignature)(void);
typedef const char* (*SimCore)(void);

typedef struct Block { void* p; size_t n; int host; struct Block* next; } Block;
typedef struct Stream { int error; char message[1024]; struct Stream* next; } Stream;
typedef struct Func { SimLaunch launch; SimSignature signature; struct Func* next; } Func;
typedef struct Binary { void* dl; uint32_t magic; Func* funcs; struct Binary* next; } Binary;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static Block* g_blocks;
static Stream* g_streams;
static Binary* g_binaries;
static int g_initialized, g_device_refs;
static long g_loads, g_launches, g_last_blocks;
static uint32_t g_last_magic;
static int64_t g_copied[4];  /* bytes copied by aclrtMemcpy(Async), per aclrtMemcpyKind */
static __thread int t_device = -1;
static __thread char t_message[2048];

static aclError fail(aclError code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_message, sizeof t_message, fmt, ap);
  va_end(ap);
  return code;
}

/* ---------------------------------------------------------------- fault injection */
static char g_spec[512];
static long g_calls[64];
static const char* const g_names[] = {
  "aclInit", "aclFinalize", "aclGetRecentErrMsg", "aclrtSetDevice", "aclrtResetDevice",
  "aclrtGetDeviceCount", "aclrtGetSocName", "aclrtGetDeviceInfo", "aclrtCreateStream",
  "aclrtDestroyStream", "aclrtSynchronizeStream", "aclrtSynchronizeStreamWithTimeout",
  "aclrtMalloc", "aclrtFree", "aclrtMallocHost", "aclrtFreeHost", "aclrtMemcpy",
  "aclrtMemcpyAsync", "aclrtBinaryLoadFromData", "aclrtBinaryGetFunction", "aclrtBinaryUnLoad",
  "aclrtLaunchKernelWithHostArgs", NULL};

/* The N-th call of `name` since PYASC_ACL_STANDIN_FAIL last changed, when the spec names it. */
static int injected(const char* name) {
  const char* spec = getenv("PYASC_ACL_STANDIN_FAIL");
  int index = -1, hit = 0;
  for (int i = 0; g_names[i]; ++i) if (strcmp(g_names[i], name) == 0) index = i;
  pthread_mutex_lock(&g_lock);
  if (strncmp(spec ? spec : "", g_spec, sizeof g_spec) != 0) {
    snprintf(g_spec, sizeof g_spec, "%s", spec ? spec : "");
    memset(g_calls, 0, sizeof g_calls);
  }
  long count = ++g_calls[index];
  for (const char* item = g_spec; *item;) {
    size_t len = strcspn(item, ",");
    size_t name_len = strcspn(item, ":,");
    long nth = name_len < len ? atol(item + name_len + 1) : 1;
    if (name_len == strlen(name) && strncmp(item, name, name_len) == 0 && count == nth) hit = 1;
    item += len + (item[len] == ',');
  }
  pthread_mutex_unlock(&g_lock);
  if (hit) fail(0, "stand-in: injected failure of %s (call %ld)", name, count);
  return hit;
}

static aclError injected_code(const char* name) {
  return strstr(name, "Malloc") ? RT_MEMORY_ALLOCATION : RT_INTERNAL_ERROR;
}

#define INJECT(name) do { if (injected(name)) return injected_code(name); } while (0)
#define NEED_INIT() do { if (!g_initialized) return fail(UNINITIALIZE, "aclInit was not called"); } while (0)
#define NEED_DEVICE(name) do { NEED_INIT(); if (t_device < 0) \
  return fail(RT_CONTEXT_NULL, "%s: this thread has no device (call aclrtSetDevice)", name); } while (0)

/* ---------------------------------------------------------------- tables (lock held) */
static Block* find_block(const void* p, size_t n, int host) {
  uintptr_t a = (uintptr_t)p;
  for (Block* b = g_blocks; b; b = b->next) {
    uintptr_t lo = (uintptr_t)b->p;
    if (b->host == host && a >= lo && a < lo + (b->n ? b->n : 1) && a + n <= lo + b->n) return b;
  }
  return NULL;
}

static int device_range(const void* p, size_t n) {
  pthread_mutex_lock(&g_lock);
  int ok = find_block(p, n, 0) != NULL;
  pthread_mutex_unlock(&g_lock);
  return ok;
}

static int device_pointer(const void* p) { return device_range(p, 0); }

static Stream* find_stream(void* s) {
  for (Stream* it = g_streams; it; it = it->next) if (it == s) return it;
  return NULL;
}

static Func* find_func(void* f) {
  for (Binary* b = g_binaries; b; b = b->next)
    for (Func* it = b->funcs; it; it = it->next) if (it == f) return it;
  return NULL;
}

static int soc_count(void) {
  const char* env = getenv("PYASC_ACL_STANDIN_DEVICES");
  return env ? atoi(env) : 1;
}

/* ---------------------------------------------------------------- init and devices */
API aclError aclInit(const char* config) {
  (void)config;
  INJECT("aclInit");
  if (g_initialized) return fail(REPEAT_INITIALIZE, "aclInit: already initialized");
  g_initialized = 1;
  return OK;
}

API aclError aclFinalize(void) {
  INJECT("aclFinalize");
  NEED_INIT();
  g_initialized = 0;
  return OK;
}

API const char* aclGetRecentErrMsg(void) {
  if (injected("aclGetRecentErrMsg") || !t_message[0]) return NULL;
  return t_message;
}

API aclError aclrtGetDeviceCount(uint32_t* count) {
  INJECT("aclrtGetDeviceCount");
  if (!count) return fail(INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
  *count = (uint32_t)soc_count();
  return OK;
}

API aclError aclrtSetDevice(int32_t id) {
  INJECT("aclrtSetDevice");
  NEED_INIT();
  if (id < 0 || id >= soc_count()) return fail(RT_INVALID_DEVICEID, "no device %d", id);
  t_device = id;
  pthread_mutex_lock(&g_lock);
  ++g_device_refs;
  pthread_mutex_unlock(&g_lock);
  return OK;
}

API aclError aclrtResetDevice(int32_t id) {
  INJECT("aclrtResetDevice");
  NEED_INIT();
  if (id < 0 || id >= soc_count()) return fail(RT_INVALID_DEVICEID, "no device %d", id);
  pthread_mutex_lock(&g_lock);
  int refs = g_device_refs > 0 ? g_device_refs-- : 0;
  pthread_mutex_unlock(&g_lock);
  return refs ? OK : fail(RT_INVALID_DEVICEID, "aclrtResetDevice(%d) without aclrtSetDevice", id);
}

API const char* aclrtGetSocName(void) {
  if (injected("aclrtGetSocName") || !g_initialized) return NULL;
  const char* env = getenv("PYASC_ACL_STANDIN_SOC");
  return env && *env ? env : "Ascend910B1";
}

API aclError aclrtGetDeviceInfo(uint32_t id, int attr, int64_t* value) {
  INJECT("aclrtGetDeviceInfo");
  NEED_INIT();
  if ((int)id >= soc_count()) return fail(RT_INVALID_DEVICEID, "no device %u", id);
  if (!value) return fail(INVALID_PARAM, "aclrtGetDeviceInfo: value is NULL");
  switch (attr) {
    case 101: case 102: *value = 24; return OK;
    case 201: *value = 48; return OK;
    default: return fail(RT_FEATURE_NOT_SUPPORT, "aclrtGetDeviceInfo: attribute %d", attr);
  }
}

/* ---------------------------------------------------------------- streams */
API aclError aclrtCreateStream(void** stream) {
  INJECT("aclrtCreateStream");
  NEED_DEVICE("aclrtCreateStream");
  if (!stream) return fail(INVALID_PARAM, "aclrtCreateStream: stream is NULL");
  Stream* s = calloc(1, sizeof *s);
  pthread_mutex_lock(&g_lock);
  s->next = g_streams;
  g_streams = s;
  pthread_mutex_unlock(&g_lock);
  *stream = s;
  return OK;
}

API aclError aclrtDestroyStream(void* stream) {
  INJECT("aclrtDestroyStream");
  NEED_DEVICE("aclrtDestroyStream");
  pthread_mutex_lock(&g_lock);
  for (Stream** it = &g_streams; *it; it = &(*it)->next) {
    if (*it == stream) {
      *it = (*it)->next;
      pthread_mutex_unlock(&g_lock);
      free(stream);
      return OK;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return fail(RT_INVALID_HANDLE, "aclrtDestroyStream: %p is not a stream", stream);
}

static aclError synchronize(void* stream, const char* name) {
  NEED_DEVICE(name);
  pthread_mutex_lock(&g_lock);
  Stream* s = find_stream(stream);
  aclError error = s ? s->error : RT_INVALID_HANDLE;
  if (s && s->error) fail(0, "%s", s->message);
  if (s) s->error = 0;
  pthread_mutex_unlock(&g_lock);
  if (!s) return fail(RT_INVALID_HANDLE, "%s: %p is not a stream", name, stream);
  return error;
}

API aclError aclrtSynchronizeStream(void* stream) {
  INJECT("aclrtSynchronizeStream");
  return synchronize(stream, "aclrtSynchronizeStream");
}

API aclError aclrtSynchronizeStreamWithTimeout(void* stream, int32_t timeout) {
  (void)timeout;  /* the stand-in's work is done when it is queued */
  INJECT("aclrtSynchronizeStreamWithTimeout");
  return synchronize(stream, "aclrtSynchronizeStreamWithTimeout");
}

/* ---------------------------------------------------------------- memory */
static aclError allocate(void** out, size_t size, int host, const char* name) {
  if (!out || size == 0) return fail(INVALID_PARAM, "%s: NULL pointer or size 0", name);
  Block* b = calloc(1, sizeof *b);
  /* 64-byte aligned, rounded up to 32 bytes plus 32 as aclrtMalloc does; filled with a
     pattern so a kernel reading memory nobody copied in sees garbage, not zeros */
  size_t padded = ((size + 31) / 32) * 32 + 32;
  b->p = aligned_alloc(64, ((padded + 63) / 64) * 64);
  if (!b->p) { free(b); return fail(RT_MEMORY_ALLOCATION, "%s: out of host memory", name); }
  memset(b->p, 0xA5, padded);
  b->n = size;
  b->host = host;
  pthread_mutex_lock(&g_lock);
  b->next = g_blocks;
  g_blocks = b;
  pthread_mutex_unlock(&g_lock);
  *out = b->p;
  return OK;
}

static aclError release(void* p, int host, const char* name) {
  pthread_mutex_lock(&g_lock);
  for (Block** it = &g_blocks; *it; it = &(*it)->next) {
    if ((*it)->p == p && (*it)->host == host) {
      Block* b = *it;
      *it = b->next;
      pthread_mutex_unlock(&g_lock);
      free(b->p);
      free(b);
      return OK;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return fail(INVALID_PARAM, "%s: %p is not a live %s allocation", name, p, host ? "host" : "device");
}

API aclError aclrtMalloc(void** p, size_t size, int policy) {
  INJECT("aclrtMalloc");
  NEED_DEVICE("aclrtMalloc");
  if (policy < 0 || policy > 3) return fail(INVALID_PARAM, "aclrtMalloc: policy %d", policy);
  return allocate(p, size, 0, "aclrtMalloc");
}

API aclError aclrtFree(void* p) {
  INJECT("aclrtFree");
  NEED_DEVICE("aclrtFree");
  return release(p, 0, "aclrtFree");
}

API aclError aclrtMallocHost(void** p, size_t size) {
  INJECT("aclrtMallocHost");
  NEED_DEVICE("aclrtMallocHost");
  return allocate(p, size, 1, "aclrtMallocHost");
}

API aclError aclrtFreeHost(void* p) {
  INJECT("aclrtFreeHost");
  NEED_DEVICE("aclrtFreeHost");
  return release(p, 1, "aclrtFreeHost");
}

static aclError copy(void* dst, size_t dst_max, const void* src, size_t count, int kind,
                     const char* name) {
  if (count > dst_max) return fail(INVALID_PARAM, "%s: count %zu > destMax %zu", name, count, dst_max);
  if (!dst || !src) return fail(INVALID_PARAM, "%s: NULL address", name);
  int dst_dev = device_pointer(dst), src_dev = device_pointer(src);
  int want_dst = kind == 1 || kind == 3, want_src = kind == 2 || kind == 3;
  if (kind < 0 || kind > 3)
    return fail(INVALID_PARAM, "%s: memcpy kind %d is not HOST_TO_HOST..DEVICE_TO_DEVICE", name, kind);
  if (dst_dev != want_dst || src_dev != want_src)
    return fail(INVALID_PARAM, "%s: kind %d but dst %p is %s and src %p is %s", name, kind,
                dst, dst_dev ? "device" : "host", src, src_dev ? "device" : "host");
  if ((want_dst && !device_range(dst, count)) || (want_src && !device_range(src, count)))
    return fail(INVALID_PARAM, "%s: %zu bytes overrun a device allocation", name, count);
  memmove(dst, src, count);
  pthread_mutex_lock(&g_lock);
  g_copied[kind] += (int64_t)count;
  pthread_mutex_unlock(&g_lock);
  return OK;
}

API aclError aclrtMemcpy(void* dst, size_t dst_max, const void* src, size_t count, int kind) {
  INJECT("aclrtMemcpy");
  NEED_DEVICE("aclrtMemcpy");
  return copy(dst, dst_max, src, count, kind, "aclrtMemcpy");
}

API aclError aclrtMemcpyAsync(void* dst, size_t dst_max, const void* src, size_t count, int kind,
                              void* stream) {
  INJECT("aclrtMemcpyAsync");
  NEED_DEVICE("aclrtMemcpyAsync");
  pthread_mutex_lock(&g_lock);
  int live = find_stream(stream) != NULL;
  pthread_mutex_unlock(&g_lock);
  if (!live) return fail(RT_INVALID_HANDLE, "aclrtMemcpyAsync: %p is not a stream", stream);
  int pinned = 1;
  pthread_mutex_lock(&g_lock);
  if (kind == 1) pinned = find_block(src, count, 1) != NULL;
  if (kind == 2) pinned = find_block(dst, count, 1) != NULL;
  pthread_mutex_unlock(&g_lock);
  if (!pinned) return fail(INVALID_PARAM, "aclrtMemcpyAsync: the host side must come from aclrtMallocHost");
  return copy(dst, dst_max, src, count, kind, "aclrtMemcpyAsync");
}

/* ---------------------------------------------------------------- binaries and kernels */
API aclError aclrtBinaryLoadFromData(const void* data, size_t length, const Opts* options, void** handle) {
  INJECT("aclrtBinaryLoadFromData");
  NEED_DEVICE("aclrtBinaryLoadFromData");
  if (!data || !length || !handle) return fail(INVALID_PARAM, "aclrtBinaryLoadFromData: NULL data or handle");
  uint32_t magic = 0;
  for (size_t i = 0; options && i < options->numOpt; ++i)
    if (options->options[i].type == 2) magic = options->options[i].value.magic;
  if (magic != MAGIC_VECTOR && magic != MAGIC_AICORE && magic != MAGIC_CUBE)
    return fail(INVALID_PARAM, "aclrtBinaryLoadFromData: no valid ACL_RT_BINARY_LOAD_OPT_MAGIC option (got %#x)", magic);
  const char* tmp = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/pyasc-acl-standin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return fail(RT_INTERNAL_ERROR, "aclrtBinaryLoadFromData: cannot create %s", path);
  size_t done = 0;
  while (done < length) {
    ssize_t n = write(fd, (const char*)data + done, length - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  close(fd);
  void* dl = done == length ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  const char* why = dl ? "" : dlerror();
  unlink(path);  /* the mapping stays */
  if (!dl) return fail(INVALID_PARAM, "aclrtBinaryLoadFromData: not an ascend-sim kernel library: %s", why ? why : "write failed");
  Binary* b = calloc(1, sizeof *b);
  b->dl = dl;
  b->magic = magic;
  pthread_mutex_lock(&g_lock);
  b->next = g_binaries;
  g_binaries = b;
  ++g_loads;
  g_last_magic = magic;
  pthread_mutex_unlock(&g_lock);
  *handle = b;
  return OK;
}

/* The binary magic a kernel of core type `core` must be loaded with (0: unknown type). */
static uint32_t core_magic(const char* core) {
  if (strcmp(core, "vector") == 0) return MAGIC_VECTOR;
  if (strcmp(core, "cube") == 0) return MAGIC_CUBE;
  if (strcmp(core, "mix") == 0) return MAGIC_AICORE;
  return 0;
}

static const char* magic_name(uint32_t magic) {
  return magic == MAGIC_VECTOR ? "VECTOR_CORE" : magic == MAGIC_CUBE ? "CUBE_CORE" : "AICORE";
}

/* OK when kernel `name` of `b` records a core type matching the magic `b` was loaded with. */
static aclError check_core(Binary* b, const char* name) {
  char symbol[512];
  snprintf(symbol, sizeof symbol, "pyasc_sim_core_%s", name);
  SimCore core = (SimCore)dlsym(b->dl, symbol);
  if (!core)
    return fail(RT_KERNEL_LOOKUP, "aclrtBinaryGetFunction: kernel '%s' records no core type (%s)", name, symbol);
  uint32_t want = core_magic(core());
  if (want != b->magic)
    return fail(RT_PARAM_INVALID,
                "aclrtBinaryGetFunction: '%s' is a %s kernel, but its binary was loaded with magic "
                "%#x (%s); a %s kernel needs %#x", name, core(), b->magic, magic_name(b->magic),
                core(), want);
  return OK;
}

API aclError aclrtBinaryGetFunction(void* binary, const char* name, void** func) {
  INJECT("aclrtBinaryGetFunction");
  NEED_DEVICE("aclrtBinaryGetFunction");
  if (!name || !func) return fail(INVALID_PARAM, "aclrtBinaryGetFunction: NULL name or handle");
  pthread_mutex_lock(&g_lock);
  Binary* b = g_binaries;
  while (b && b != binary) b = b->next;
  pthread_mutex_unlock(&g_lock);
  if (!b) return fail(RT_INVALID_HANDLE, "aclrtBinaryGetFunction: %p is not a loaded binary", binary);
  char symbol[512];
  snprintf(symbol, sizeof symbol, "pyasc_sim_launch_%s", name);
  SimLaunch launch = (SimLaunch)dlsym(b->dl, symbol);
  snprintf(symbol, sizeof symbol, "pyasc_sim_signature_%s", name);
  SimSignature signature = (SimSignature)dlsym(b->dl, symbol);
  if (!launch || !signature) return fail(RT_KERNEL_LOOKUP, "aclrtBinaryGetFunction: no kernel '%s'", name);
  aclError core = check_core(b, name);
  if (core != OK) return core;
  Func* f = calloc(1, sizeof *f);
  f->launch = launch;
  f->signature = signature;
  pthread_mutex_lock(&g_lock);
  f->next = b->funcs;
  b->funcs = f;
  pthread_mutex_unlock(&g_lock);
  *func = f;
  return OK;
}

API aclError aclrtBinaryUnLoad(void* binary) {
  INJECT("aclrtBinaryUnLoad");
  NEED_DEVICE("aclrtBinaryUnLoad");
  pthread_mutex_lock(&g_lock);
  for (Binary** it = &g_binaries; *it; it = &(*it)->next) {
    if (*it == binary) {
      Binary* b = *it;
      *it = b->next;
      pthread_mutex_unlock(&g_lock);
      for (Func* f = b->funcs; f;) { Func* next = f->next; free(f); f = next; }
      dlclose(b->dl);
      free(b);
      return OK;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return fail(RT_INVALID_HANDLE, "aclrtBinaryUnLoad: %p is not a loaded binary", binary);
}

/* The C size of a signature code (0: unknown). */
static size_t code_size(const char* code, size_t len) {
  static const struct { const char* code; size_t size; } sizes[] = {
    {"ptr", 8}, {"i8", 1}, {"u8", 1}, {"bool", 1}, {"i16", 2}, {"u16", 2}, {"f16", 2},
    {"bf16", 2}, {"i32", 4}, {"u32", 4}, {"f32", 4}, {"i64", 8}, {"u64", 8}, {"f64", 8}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i)
    if (strlen(sizes[i].code) == len && strncmp(sizes[i].code, code, len) == 0) return sizes[i].size;
  return 0;
}

enum { MAX_ARGS = 256 };

/* Unpack `args` by `sig` into argv/bytes; returns OK or an error (message set). */
static aclError unpack(const char* sig, const uint8_t* args, size_t size, void** argv,
                       uint64_t* bytes, size_t* nargs) {
  size_t offset = 0, n = 0;
  for (const char* c = sig; *c && n < MAX_ARGS;) {
    size_t len = strcspn(c, ","), width = code_size(c, len);
    int is_ptr = len == 3 && strncmp(c, "ptr", 3) == 0;
    if (!width) return fail(INVALID_PARAM, "launch: unknown parameter kind '%.*s'", (int)len, c);
    offset = (offset + width - 1) / width * width;
    if (offset + width > size)
      return fail(INVALID_PARAM, "launch: the argument block (%zu bytes) ends before parameter %zu", size, n);
    argv[n] = (void*)(args + offset);
    bytes[n] = 0;
    if (is_ptr) {
      void* p;
      memcpy(&p, args + offset, sizeof p);
      pthread_mutex_lock(&g_lock);
      Block* b = find_block(p, 0, 0);
      pthread_mutex_unlock(&g_lock);
      if (!b) return fail(INVALID_PARAM, "launch: parameter %zu (%p) is not a device address", n, p);
      bytes[n] = (uint64_t)((uintptr_t)b->p + b->n - (uintptr_t)p);
    }
    offset += width;
    ++n;
    c += len + (c[len] == ',');
  }
  offset = (offset + 7) / 8 * 8;
  if (offset != size) return fail(INVALID_PARAM, "launch: the signature '%s' packs to %zu bytes, got %zu", sig, offset, size);
  *nargs = n;
  return OK;
}

API aclError aclrtLaunchKernelWithHostArgs(void* func, uint32_t blocks, void* stream, void* cfg,
                                           void* args, size_t size, void* holders, size_t nholders) {
  INJECT("aclrtLaunchKernelWithHostArgs");
  NEED_DEVICE("aclrtLaunchKernelWithHostArgs");
  (void)cfg;
  if (holders || nholders) return fail(INVALID_PARAM, "launch: placeholders are not supported");
  if (blocks == 0) return fail(INVALID_PARAM, "launch: numBlocks is 0");
  if (size && !args) return fail(INVALID_PARAM, "launch: NULL argument block of %zu bytes", size);
  pthread_mutex_lock(&g_lock);
  Func* f = find_func(func);
  Stream* s = find_stream(stream);
  pthread_mutex_unlock(&g_lock);
  if (!f) return fail(RT_INVALID_HANDLE, "launch: %p is not a function handle", func);
  if (!s) return fail(RT_INVALID_HANDLE, "launch: %p is not a stream", stream);
  void* argv[MAX_ARGS];
  uint64_t bytes[MAX_ARGS];
  size_t nargs = 0;
  uint8_t* copy_of_args = malloc(size ? size : 1);  /* the runtime copies the host block */
  memcpy(copy_of_args, args, size);
  aclError rc = unpack(f->signature(), copy_of_args, size, argv, bytes, &nargs);
  if (rc == OK) {
    char err[1024] = "";
    int status = f->launch(blocks, argv, bytes, NULL, err, sizeof err, NULL);
    pthread_mutex_lock(&g_lock);
    ++g_launches;
    g_last_blocks = blocks;
    if (status != 0 && !s->error) {  /* reported by the next synchronize, as on hardware */
      s->error = RT_VECTOR_CORE_EXCEPTION;
      snprintf(s->message, sizeof s->message, "kernel failed (status %d): %.900s", status, err);
    }
    pthread_mutex_unlock(&g_lock);
  }
  free(copy_of_args);
  return rc;
}

/* ---------------------------------------------------------------- test hooks */
/* out: device blocks, device bytes, host blocks, binaries, streams, loads, launches,
   device references (aclrtSetDevice - aclrtResetDevice), initialized, the block count of
   the last launch */
API void pyasc_standin_stats(int64_t out[10]) {
  memset(out, 0, 10 * sizeof *out);
  pthread_mutex_lock(&g_lock);
  for (Block* b = g_blocks; b; b = b->next) {
    if (b->host) { ++out[2]; } else { ++out[0]; out[1] += (int64_t)b->n; }
  }
  for (Binary* b = g_binaries; b; b = b->next) ++out[3];
  for (Stream* s = g_streams; s; s = s->next) ++out[4];
  out[5] = g_loads;
  out[6] = g_launches;
  out[7] = g_device_refs;
  out[8] = g_initialized;
  out[9] = g_last_blocks;
  pthread_mutex_unlock(&g_lock);
}

API uint32_t pyasc_standin_last_magic(void) { return g_last_magic; }

/* The magics of the loaded binaries (at most `max`); returns how many are loaded. */
API int64_t pyasc_standin_magics(uint32_t* out, int64_t max) {
  int64_t n = 0;
  pthread_mutex_lock(&g_lock);
  for (Binary* b = g_binaries; b; b = b->next, ++n) if (n < max) out[n] = b->magic;
  pthread_mutex_unlock(&g_lock);
  return n;
}

/* Bytes copied so far per aclrtMemcpyKind (HOST_TO_HOST, HOST_TO_DEVICE, DEVICE_TO_HOST,
   DEVICE_TO_DEVICE). */
API void pyasc_standin_copied(int64_t out[4]) {
  pthread_mutex_lock(&g_lock);
  memcpy(out, g_copied, sizeof g_copied);
  pthread_mutex_unlock(&g_lock);
}
