/* Harmonic guest SDK for C: the host imports of docs/wasm.md and helpers.
 *
 * Build a guest with the Zig toolchain from PyPI (`pip install ziglang`):
 *   python -m ziglang cc -target wasm32-freestanding -O2 -nostdlib -Wl,--no-entry \
 *       -Wl,--export-memory -I examples/wasm/sdk -o guest.wasm guest.c
 * Export the extension points you implement with HG_EXPORT("filter") etc.
 */
#ifndef HARMONIC_GUEST_H
#define HARMONIC_GUEST_H

#include <stdint.h>

#define HG_EXPORT(name) __attribute__((export_name(name)))
#define HG_IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))

enum { HG_SUCCESS = 0, HG_ERROR = 1, HG_UNSCHEDULABLE = 2, HG_UNRESOLVABLE = 3, HG_WAIT = 4, HG_SKIP = 5 };

/* Getters write into buf when the data fits in limit, and return the data's size either way. */
typedef int32_t (*hg_getter)(uint32_t buf, uint32_t limit);

HG_IMPORT("k8s.io/api", "pod") int32_t hg_pod_json(uint32_t buf, uint32_t limit);
HG_IMPORT("k8s.io/api", "nodeName") int32_t hg_node_name(uint32_t buf, uint32_t limit);
HG_IMPORT("k8s.io/scheduler", "get_config") int32_t hg_get_config(uint32_t buf, uint32_t limit);
HG_IMPORT("k8s.io/scheduler", "cycle") int64_t hg_cycle(void);
HG_IMPORT("k8s.io/scheduler", "result.status_reason") void hg_set_reason(uint32_t buf, uint32_t len);
HG_IMPORT("k8s.io/scheduler", "result.node_names") void hg_set_node_names(uint32_t buf, uint32_t len);
HG_IMPORT("k8s.io/scheduler", "result.node_codes") void hg_set_node_codes(uint32_t buf, uint32_t len);
HG_IMPORT("k8s.io/scheduler", "result.scores") void hg_set_scores(uint32_t buf, uint32_t len);
HG_IMPORT("k8s.io/scheduler", "nodeScoreList") int32_t hg_node_scores(uint32_t buf, uint32_t limit);
HG_IMPORT("k8s.io/scheduler", "result.normalized_score_list") void hg_set_normalized(uint32_t buf, uint32_t len);
HG_IMPORT("k8s.io/klog", "log") void hg_log(int32_t severity, uint32_t msg, uint32_t len);
HG_IMPORT("harmonic.io/nodes", "count") int32_t hg_nodes_count(void);
HG_IMPORT("harmonic.io/nodes", "names") int32_t hg_nodes_names(uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/nodes", "label") int32_t hg_nodes_label(uint32_t key, uint32_t key_len, uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/nodes", "unschedulable") int32_t hg_nodes_unschedulable(uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/nodes", "fields") int32_t hg_nodes_fields(uint32_t spec, uint32_t spec_len, uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/pod", "name") int32_t hg_pod_name(uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/pod", "namespace") int32_t hg_pod_namespace(uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/pod", "uid") int32_t hg_pod_uid(uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/pod", "label") int32_t hg_pod_label(uint32_t key, uint32_t key_len, uint32_t buf, uint32_t limit);
HG_IMPORT("harmonic.io/pod", "tolerations") int32_t hg_pod_tolerations(uint32_t buf, uint32_t limit);

#define HG_PTR(p) ((uint32_t)(uintptr_t)(p))

static inline uint32_t hg_strlen(const char *s) {
    uint32_t n = 0;
    while (s[n]) n++;
    return n;
}

static inline int hg_eq(const char *a, uint32_t alen, const char *b, uint32_t blen) {
    if (alen != blen) return 0;
    for (uint32_t i = 0; i < alen; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* A bump allocator over linear memory, reset at the start of each call (hg_reset). */
extern unsigned char __heap_base;
static uint32_t hg_top;

static inline void hg_reset(void) { hg_top = HG_PTR(&__heap_base); }

static inline void *hg_alloc(uint32_t size) {
    if (hg_top == 0) hg_reset();
    uint32_t p = (hg_top + 7u) & ~7u;
    uint32_t end = p + size;
    uint32_t have = (uint32_t)__builtin_wasm_memory_size(0) * 65536u;
    if (end > have) {
        uint32_t pages = (end - have + 65535u) / 65536u;
        if (__builtin_wasm_memory_grow(0, pages) < 0) __builtin_trap();
    }
    hg_top = end;
    return (void *)(uintptr_t)p;
}

/* The largest value fetched so far: buffers start at that size, so a guest that sees the same number
 * of nodes every cycle asks the host once per value, not twice. */
static uint32_t hg_cap_hint = 4096;

static inline uint8_t *hg_buffer(int32_t needed, uint32_t *cap) {
    if (needed > (int32_t)hg_cap_hint) hg_cap_hint = (uint32_t)needed;
    *cap = needed > 0 ? (uint32_t)needed : hg_cap_hint;
    return hg_alloc(*cap);
}

/* Calls a getter, growing the buffer once if the data did not fit. */
static inline uint8_t *hg_get(hg_getter f, int32_t *len) {
    uint32_t cap;
    uint8_t *p = hg_buffer(0, &cap);
    int32_t n = f(HG_PTR(p), cap);
    if (n > (int32_t)cap) {
        p = hg_buffer(n, &cap);
        n = f(HG_PTR(p), cap);
    }
    *len = n;
    return p;
}

static inline void hg_reason(const char *s) { hg_set_reason(HG_PTR(s), hg_strlen(s)); }

/* A string column: u32 n | u32 end[n] | u8 present[n] | bytes. */
typedef struct {
    uint32_t n;
    const uint8_t *ends;
    const uint8_t *present;
    const char *data;
} hg_column;

static inline uint32_t hg_u32(const uint8_t *p) {
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

static inline hg_column hg_column_of(const uint8_t *p) {
    hg_column c;
    c.n = hg_u32(p);
    c.ends = p + 4;
    c.present = c.ends + 4 * c.n;
    c.data = (const char *)(c.present + c.n);
    return c;
}

/* Value i of the column and its length; NULL when absent. */
static inline const char *hg_column_at(const hg_column *c, uint32_t i, uint32_t *len) {
    if (!c->present[i]) return 0;
    uint32_t begin = i ? hg_u32(c->ends + 4 * (i - 1)) : 0;
    *len = hg_u32(c->ends + 4 * i) - begin;
    return c->data + begin;
}

/* The column of a node label over the candidate nodes. */
static inline hg_column hg_nodes_label_column(const char *key, uint32_t key_len) {
    uint32_t cap;
    uint8_t *p = hg_buffer(0, &cap);
    int32_t n = hg_nodes_label(HG_PTR(key), key_len, HG_PTR(p), cap);
    if (n > (int32_t)cap) {
        p = hg_buffer(n, &cap);
        hg_nodes_label(HG_PTR(key), key_len, HG_PTR(p), cap);
    }
    return hg_column_of(p);
}

/* A list column (harmonic.io/nodes.fields): per node, entries of `arity` strings each. */
typedef struct {
    uint32_t n;
    uint32_t arity;
    const uint8_t *ends;
    hg_column strings;
} hg_list;

/* Reads the list column at p; returns where the next section starts. */
static inline const uint8_t *hg_list_of(const uint8_t *p, uint32_t arity, hg_list *out) {
    out->n = hg_u32(p);
    out->arity = arity;
    out->ends = p + 4;
    const uint8_t *col = out->ends + 4 * out->n;
    out->strings = hg_column_of(col);
    uint32_t m = out->strings.n;
    uint32_t bytes = m ? hg_u32(out->strings.ends + 4 * (m - 1)) : 0;
    return col + 4 + 5 * m + bytes;
}

/* Node i's entries are [*begin, *end). */
static inline void hg_list_range(const hg_list *l, uint32_t i, uint32_t *begin, uint32_t *end) {
    *begin = i ? hg_u32(l->ends + 4 * (i - 1)) : 0;
    *end = hg_u32(l->ends + 4 * i);
}

/* String k (0..arity-1) of entry e, and its length. */
static inline const char *hg_list_at(const hg_list *l, uint32_t e, uint32_t k, uint32_t *len) {
    *len = 0;
    return hg_column_at(&l->strings, e * l->arity + k, len);
}

/* Fetches the sections named in spec (comma-separated, e.g. "taints,images") for the candidates. */
static inline const uint8_t *hg_nodes_fields_get(const char *spec) {
    uint32_t cap, slen = hg_strlen(spec);
    uint8_t *p = hg_buffer(0, &cap);
    int32_t n = hg_nodes_fields(HG_PTR(spec), slen, HG_PTR(p), cap);
    if (n > (int32_t)cap) {
        p = hg_buffer(n, &cap);
        hg_nodes_fields(HG_PTR(spec), slen, HG_PTR(p), cap);
    }
    return p;
}

#endif
