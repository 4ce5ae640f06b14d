/* TaintToleration, reimplemented as a guest over the whole Node (harmonic.io/nodes.fields): must
 * decide and score exactly as the in-tree plugin.
 *
 * Filter: a node with a NoSchedule or NoExecute taint the pod does not tolerate is
 * UnschedulableAndUnresolvable ("node(s) had untolerated taint(s)").
 * Score: the number of the node's PreferNoSchedule taints not tolerated by the pod's tolerations whose
 * effect is empty or PreferNoSchedule; NormalizeScore reverses it onto 0..100 (fewer scores higher),
 * as DefaultNormalizeScore(100, reverse=true). No guestConfig.
 */
#include "harmonic_guest.h"

typedef struct {
    const char *key, *op, *value, *effect;
    uint32_t klen, olen, vlen, elen;
} toleration;

#define MAX_TOLERATIONS 64
static toleration tols[MAX_TOLERATIONS];
static uint32_t ntols;

static void read_tolerations(void) {
    int32_t len;
    hg_column c = hg_column_of(hg_get(hg_pod_tolerations, &len));
    ntols = 0;
    /* Four strings per toleration: key, operator, value, effect. */
    for (uint32_t i = 0; i + 3 < c.n && ntols < MAX_TOLERATIONS; i += 4) {
        toleration *t = &tols[ntols++];
        t->key = hg_column_at(&c, i, &t->klen);
        t->op = hg_column_at(&c, i + 1, &t->olen);
        t->value = hg_column_at(&c, i + 2, &t->vlen);
        t->effect = hg_column_at(&c, i + 3, &t->elen);
    }
}

/* v1helper.TolerationsTolerateTaint, over the tolerations `only_prefer` selects. */
static int tolerated(const char *key, uint32_t klen, const char *value, uint32_t vlen, const char *effect,
                     uint32_t elen, int only_prefer) {
    for (uint32_t i = 0; i < ntols; i++) {
        const toleration *t = &tols[i];
        if (only_prefer && t->elen && !hg_eq(t->effect, t->elen, "PreferNoSchedule", 16)) continue;
        if (t->elen && !hg_eq(t->effect, t->elen, effect, elen)) continue;
        if (t->klen && !hg_eq(t->key, t->klen, key, klen)) continue;
        if (hg_eq(t->op, t->olen, "Exists", 6)) return 1;
        if ((t->olen == 0 || hg_eq(t->op, t->olen, "Equal", 5)) && hg_eq(t->value, t->vlen, value, vlen))
            return 1;
    }
    return 0;
}

/* The number of node i's taints with one of the effects that the tolerations do not tolerate. */
static uint32_t untolerated(const hg_list *taints, uint32_t i, int prefer) {
    uint32_t begin, end, n = 0;
    hg_list_range(taints, i, &begin, &end);
    for (uint32_t e = begin; e < end; e++) {
        uint32_t klen, vlen, elen;
        const char *key = hg_list_at(taints, e, 0, &klen);
        const char *value = hg_list_at(taints, e, 1, &vlen);
        const char *effect = hg_list_at(taints, e, 2, &elen);
        int counted = prefer ? hg_eq(effect, elen, "PreferNoSchedule", 16)
                             : hg_eq(effect, elen, "NoSchedule", 10) || hg_eq(effect, elen, "NoExecute", 9);
        if (counted && !tolerated(key, klen, value, vlen, effect, elen, prefer)) n++;
    }
    return n;
}

HG_EXPORT("filter") int32_t filter(void) {
    hg_reset();
    hg_list taints;
    hg_list_of(hg_nodes_fields_get("taints"), 3, &taints);
    read_tolerations();
    uint8_t *codes = hg_alloc(taints.n);
    int any = 0;
    for (uint32_t i = 0; i < taints.n; i++) {
        codes[i] = untolerated(&taints, i, 0) ? HG_UNRESOLVABLE : HG_SUCCESS;
        any |= codes[i];
    }
    if (!any) return HG_SUCCESS;
    hg_reason("node(s) had untolerated taint(s)");
    hg_set_node_codes(HG_PTR(codes), taints.n);
    return HG_SUCCESS;
}

HG_EXPORT("score") int32_t score(void) {
    hg_reset();
    hg_list taints;
    hg_list_of(hg_nodes_fields_get("taints"), 3, &taints);
    read_tolerations();
    int64_t *scores = hg_alloc(8 * taints.n);
    for (uint32_t i = 0; i < taints.n; i++) scores[i] = untolerated(&taints, i, 1);
    hg_set_scores(HG_PTR(scores), 8 * taints.n);
    return HG_SUCCESS;
}

HG_EXPORT("normalizescore") int32_t normalizescore(void) {
    hg_reset();
    int32_t len;
    int64_t *scores = (int64_t *)hg_get(hg_node_scores, &len);
    uint32_t n = (uint32_t)len / 8;
    int64_t max = 0;
    for (uint32_t i = 0; i < n; i++)
        if (scores[i] > max) max = scores[i];
    for (uint32_t i = 0; i < n; i++) scores[i] = max == 0 ? 100 : 100 - 100 * scores[i] / max;
    hg_set_normalized(HG_PTR(scores), 8 * n);
    return HG_SUCCESS;
}
