"""TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes (filtering_test.go), TestPreferredAffinity
and TestPreferredAffinityWithHardPodAffinitySymmetricWeight (scoring_test.go) of
pkg/scheduler/framework/plugins/interpodaffinity, as conformance cases.

Upstream's pods mostly have no namespace (``""``); a manifest's missing namespace is ``default``, so
``""`` becomes ``default`` everywhere, term namespace lists included. The namespaces upstream's informer
holds go into each case's ``namespaces`` field (name -> labels).
"""

from __future__ import annotations

from typing import Any

from k8s import SUCCESS, Obj, node, pod, status, unresolvable, unschedulable, write

AFF = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
REQ, PREF = "required", "preferred"
SKIP: Obj = {"code": "Skip", "reasons": []}
BAD = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TEAM1, TEAM2 = {"team": "team1"}, {"team": "team2"}
#: scoring_test.go's (and TestRequiredAffinitySingleNode's) namespaces.
NAMESPACES = {
    "subteam1.team1": TEAM1,
    "subteam2.team1": TEAM1,
    "subteam1.team2": TEAM2,
    "subteam2.team2": TEAM2,
}


def ns(name: str) -> str:
    return name or "default"


def expr(key: str, op: str, values: list[str] | None = None) -> Obj:
    e: Obj = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def sel(*exprs: Obj) -> Obj:
    return {"matchExpressions": list(exprs)}


def term(
    selector: Obj | None, key: str = "", namespaces: list[str] | None = None, ns_selector: Obj | None = None
) -> Obj:
    t: Obj = {}
    if selector is not None:
        t["labelSelector"] = selector
    if namespaces is not None:
        t["namespaces"] = [ns(n) for n in namespaces]
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    t["topologyKey"] = key
    return t


def weighted(weight: int, t: Obj) -> Obj:
    return {"weight": weight, "podAffinityTerm": t}


class MakePod:
    """st.MakePod(): name, namespace, labels, node and (anti-)affinity terms."""

    def __init__(self) -> None:
        self.name = ""
        self.namespace = ""
        self.labels: dict[str, str] = {}
        self.node_name = ""
        self.affinity: Obj = {}

    def Name(self, name: str) -> MakePod:
        self.name = name
        return self

    def Namespace(self, namespace: str) -> MakePod:
        self.namespace = namespace
        return self

    def Labels(self, labels: dict[str, str]) -> MakePod:
        self.labels.update(labels)
        return self

    def Label(self, k: str, v: str) -> MakePod:
        self.labels[k] = v
        return self

    def Node(self, name: str) -> MakePod:
        self.node_name = name
        return self

    def _add(self, kind: str, which: str, t: Obj) -> MakePod:
        section = self.affinity.setdefault(kind, {})
        if which == REQ:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(t)
        else:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(weighted(1, t))
        return self

    def PodAffinityIn(self, k: str, tk: str, vals: list[str], which: str) -> MakePod:
        return self._add("podAffinity", which, term(sel(expr(k, "In", vals)), tk))

    def PodAffinityNotIn(self, k: str, tk: str, vals: list[str], which: str) -> MakePod:
        return self._add("podAffinity", which, term(sel(expr(k, "NotIn", vals)), tk))

    def PodAffinityExists(self, k: str, tk: str, which: str) -> MakePod:
        return self._add("podAffinity", which, term(sel(expr(k, "Exists")), tk))

    def PodAntiAffinityIn(self, k: str, tk: str, vals: list[str], which: str) -> MakePod:
        return self._add("podAntiAffinity", which, term(sel(expr(k, "In", vals)), tk))

    def PodAntiAffinityNotIn(self, k: str, tk: str, vals: list[str], which: str) -> MakePod:
        return self._add("podAntiAffinity", which, term(sel(expr(k, "NotIn", vals)), tk))

    def PodAntiAffinityExists(self, k: str, tk: str, which: str) -> MakePod:
        return self._add("podAntiAffinity", which, term(sel(expr(k, "Exists")), tk))

    def obj(self, default_name: str) -> Obj:
        return pod(
            self.name or default_name,
            ns(self.namespace),
            node_name=self.node_name,
            labels=self.labels or None,
            affinity=self.affinity or None,
        )


def raw_pod(
    name: str,
    namespace: str = "",
    labels: dict[str, str] | None = None,
    node_name: str = "",
    affinity: Obj | None = None,
) -> Obj:
    """A &v1.Pod{...} literal."""
    return pod(name, ns(namespace), node_name=node_name, labels=labels, affinity=affinity)


def with_terms(
    namespace: str, labels: dict[str, str], affinity: list[Obj] | None, anti: list[Obj] | None
) -> Obj:
    """createPodWithAffinityTerms(namespace, "", labels, affinity, antiAffinity)."""
    a: Obj = {"podAffinity": {}, "podAntiAffinity": {}}
    if affinity is not None:
        a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = affinity
    if anti is not None:
        a["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = anti
    return raw_pod("p", namespace, labels, affinity=a)


def existing(pods: list[MakePod | Obj]) -> list[Obj]:
    return [p.obj(f"e{i}") if isinstance(p, MakePod) else p for i, p in enumerate(pods)]


def pre(code: str = "Success", *reasons: str) -> Obj:
    return {**status(code, *reasons), "nodeNames": None}


# ------------------------------------------------------------------ TestRequiredAffinitySingleNode
POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}


def single() -> MakePod:
    return MakePod().Labels(POD_LABEL).Node("node1")


def single_case(
    name: str, p: Obj, pods: list[MakePod | Obj], want: Obj = SUCCESS, want_pre: Obj | None = None
) -> Obj:
    want_pre = want_pre or pre()
    if want_pre["code"] == "Skip":
        want = SUCCESS
    elif want_pre["code"] != "Success":
        want = {k: v for k, v in want_pre.items() if k != "nodeNames"}
    return {
        "name": f"TestRequiredAffinitySingleNode/{name}",
        "kind": "filter",
        "args": {},
        "namespaces": NAMESPACES,
        "pod": p,
        "nodes": [node("node1", LABELS1)],
        "existingPods": existing(pods),
        "expected": {"node1": want},
        "expectedPreFilter": want_pre,
    }


SERVICE_IN = sel(expr("service", "In", ["securityscan", "value2"]))
TEAM1_SEL = sel(expr("team", "In", ["team1"]))

single_cases = [
    single_case(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        MakePod().obj("p"),
        [],
        want_pre=pre("Skip"),
    ),
    single_case(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
        MakePod()
        .Labels(POD_LABEL2)
        .PodAffinityIn("service", "region", ["securityscan", "value2"], REQ)
        .obj("p"),
        [single()],
    ),
    single_case(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
        MakePod()
        .Labels(POD_LABEL2)
        .PodAffinityNotIn("service", "region", ["securityscan3", "value3"], REQ)
        .obj("p"),
        [single()],
    ),
    single_case(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        with_terms("", POD_LABEL2, [term(SERVICE_IN, namespaces=["DiffNameSpace"])], None),
        [MakePod().Namespace("ns").Label("service", "securityscan").Node("node1")],
        unresolvable(AFF),
    ),
    single_case(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        MakePod().Labels(POD_LABEL).PodAffinityIn("service", "", ["antivirusscan", "value2"], REQ).obj("p"),
        [single()],
        unresolvable(AFF),
    ),
    single_case(
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
        with_terms(
            "",
            POD_LABEL2,
            [
                term(sel(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                term(
                    sel(expr("service", "In", ["securityscan"]), expr("service", "NotIn", ["WrongValue"])),
                    "region",
                ),
            ],
            None,
        ),
        [single()],
    ),
    single_case(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
        with_terms(
            "",
            POD_LABEL2,
            [
                term(sel(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
                term(
                    sel(expr("service", "In", ["securityscan2"]), expr("service", "NotIn", ["WrongValue"])),
                    "region",
                ),
            ],
            None,
        ),
        [single()],
        unresolvable(AFF),
    ),
    single_case(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        MakePod()
        .Labels(POD_LABEL2)
        .PodAffinityIn("service", "region", ["securityscan", "value2"], REQ)
        .PodAntiAffinityIn("service", "node", ["antivirusscan", "value2"], REQ)
        .obj("p"),
        [single()],
    ),
    single_case(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        MakePod()
        .Labels(POD_LABEL2)
        .PodAffinityIn("service", "region", ["securityscan", "value2"], REQ)
        .PodAntiAffinityIn("service", "node", ["antivirusscan", "value2"], REQ)
        .obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels(POD_LABEL)
            .PodAntiAffinityIn("service", "node", ["antivirusscan", "value2"], REQ)
        ],
    ),
    single_case(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        MakePod()
        .Labels(POD_LABEL2)
        .PodAffinityIn("service", "region", ["securityscan", "value2"], REQ)
        .PodAntiAffinityIn("service", "zone", ["securityscan", "value2"], REQ)
        .obj("p"),
        [single()],
        unschedulable(ANTI),
    ),
    single_case(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod()
        .Labels(POD_LABEL)
        .PodAffinityIn("service", "region", ["securityscan", "value2"], REQ)
        .PodAntiAffinityIn("service", "node", ["antivirusscan", "value2"], REQ)
        .obj("p"),
        [
            MakePod()
            .Labels(POD_LABEL)
            .Node("node1")
            .PodAntiAffinityIn("service", "zone", ["securityscan", "value2"], REQ)
        ],
        unschedulable(EXISTING),
    ),
    single_case(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        MakePod()
        .Labels(POD_LABEL)
        .PodAffinityNotIn("service", "region", ["securityscan", "value2"], REQ)
        .obj("p"),
        [MakePod().Label("service", "securityscan").Node("node2")],
        unresolvable(AFF),
    ),
    single_case(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().Labels(POD_LABEL).obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels(POD_LABEL)
            .PodAntiAffinityIn("service", "zone", ["securityscan", "value2"], REQ)
        ],
        unschedulable(EXISTING),
    ),
    single_case(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        MakePod().Labels(POD_LABEL).obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels(POD_LABEL)
            .PodAntiAffinityNotIn("service", "zone", ["securityscan", "value2"], REQ)
        ],
        want_pre=pre("Skip"),
    ),
    single_case(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
        MakePod()
        .Labels(POD_LABEL)
        .PodAntiAffinityExists("service", "region", REQ)
        .PodAntiAffinityExists("security", "region", REQ)
        .obj("p"),
        [MakePod().Node("node1").Labels(POD_LABEL2).PodAntiAffinityExists("security", "zone", REQ)],
        unschedulable(ANTI),
    ),
    single_case(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
        MakePod()
        .Labels(POD_LABEL)
        .PodAntiAffinityExists("service", "zone", REQ)
        .PodAntiAffinityExists("security", "zone", REQ)
        .obj("p"),
        [MakePod().Node("node1").Labels(POD_LABEL2).PodAntiAffinityExists("security", "zone", REQ)],
        unschedulable(ANTI),
    ),
    single_case(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
        MakePod().Labels(POD_LABEL2).PodAntiAffinityExists("security", "zone", REQ).obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels(POD_LABEL)
            .PodAntiAffinityExists("service", "zone", REQ)
            .PodAntiAffinityExists("security", "zone", REQ)
        ],
        unschedulable(EXISTING),
    ),
    single_case(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
        MakePod()
        .Labels({"abc": "", "xyz": ""})
        .PodAntiAffinityExists("abc", "zone", REQ)
        .PodAntiAffinityExists("def", "zone", REQ)
        .obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels({"def": "", "xyz": ""})
            .PodAntiAffinityExists("abc", "zone", REQ)
            .PodAntiAffinityExists("def", "zone", REQ)
        ],
        unschedulable(ANTI),
    ),
    single_case(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
        MakePod()
        .Labels({"def": "", "xyz": ""})
        .PodAntiAffinityExists("abc", "zone", REQ)
        .PodAntiAffinityExists("def", "zone", REQ)
        .obj("p"),
        [
            MakePod()
            .Node("node1")
            .Labels({"abc": "", "xyz": ""})
            .PodAntiAffinityExists("abc", "zone", REQ)
            .PodAntiAffinityExists("def", "zone", REQ)
        ],
        unschedulable(ANTI),
    ),
    single_case(
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        MakePod()
        .Labels(POD_LABEL)
        .PodAffinityIn("service", "region", ["{{.bad-value.}}"], REQ)
        .PodAffinityIn("service", "node", ["antivirusscan", "value2"], REQ)
        .obj("p"),
        [],
        want_pre=pre("UnschedulableAndUnresolvable", BAD),
    ),
    single_case(
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        MakePod()
        .Labels(POD_LABEL)
        .PodAffinityIn("service", "region", ["foo"], REQ)
        .PodAffinityIn("service", "node", ["{{.bad-value.}}"], REQ)
        .obj("p"),
        [],
        want_pre=pre("UnschedulableAndUnresolvable", BAD),
    ),
    single_case(
        "affinity with NamespaceSelector",
        with_terms("", POD_LABEL2, [term(SERVICE_IN, "region", ns_selector=TEAM1_SEL)], None),
        [raw_pod("e0", "subteam1.team1", POD_LABEL, "node1")],
    ),
    single_case(
        "affinity with non-matching NamespaceSelector",
        with_terms("", POD_LABEL2, [term(SERVICE_IN, "region", ns_selector=TEAM1_SEL)], None),
        [raw_pod("e0", "subteam1.team2", POD_LABEL, "node1")],
        unresolvable(AFF),
    ),
    single_case(
        "anti-affinity with matching NamespaceSelector",
        with_terms("subteam1.team1", POD_LABEL2, None, [term(SERVICE_IN, "zone", ns_selector=TEAM1_SEL)]),
        [raw_pod("e0", "subteam2.team1", POD_LABEL, "node1")],
        unschedulable(ANTI),
    ),
    single_case(
        "anti-affinity with matching all NamespaceSelector",
        with_terms("subteam1.team1", POD_LABEL2, None, [term(SERVICE_IN, "zone", ns_selector={})]),
        [raw_pod("e0", "subteam2.team1", POD_LABEL, "node1")],
        unschedulable(ANTI),
    ),
    single_case(
        "anti-affinity with non-matching NamespaceSelector",
        with_terms("subteam1.team1", POD_LABEL2, None, [term(SERVICE_IN, "zone", ns_selector=TEAM1_SEL)]),
        [raw_pod("e0", "subteam1.team2", POD_LABEL, "node1")],
    ),
]

# ------------------------------------------------------------------ TestRequiredAffinityMultipleNodes
RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def multi_case(
    name: str,
    p: Obj,
    pods: list[MakePod | Obj],
    nodes: list[tuple[str, dict[str, str]]],
    want: list[Obj],
    want_pre: Obj | None = None,
) -> Obj:
    want_pre = want_pre or pre()
    return {
        "name": f"TestRequiredAffinityMultipleNodes/{name}",
        "kind": "filter",
        "args": {},
        "namespaces": {"NS1": {}},
        "pod": p,
        "nodes": [node(n, labels) for n, labels in nodes],
        "existingPods": existing(pods),
        "expected": {n: w for (n, _), w in zip(nodes, want, strict=True)},
        "expectedPreFilter": want_pre,
    }


def host(name: str, **labels: str) -> tuple[str, dict[str, str]]:
    return name, {**labels, "hostname": name}


multi_cases = [
    multi_case(
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
        MakePod().PodAffinityIn("foo", "region", ["bar"], REQ).obj("p"),
        [MakePod().Name("p1").Node("node1").Labels({"foo": "bar"})],
        [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)],
        [SUCCESS, SUCCESS, unresolvable(AFF)],
    ),
    multi_case(
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
        MakePod()
        .Labels({"foo": "bar", "service": "securityscan"})
        .PodAffinityIn("foo", "zone", ["bar"], REQ)
        .PodAffinityIn("service", "zone", ["securityscan"], REQ)
        .obj("p"),
        [MakePod().Name("p1").Node("nodeA").Labels({"foo": "bar"})],
        [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})],
        [SUCCESS, SUCCESS],
    ),
    multi_case(
        "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
        MakePod()
        .Labels({"foo": "bar", "service": "securityscan"})
        .PodAffinityIn("foo", "zone", ["bar"], REQ)
        .PodAffinityIn("service", "zone", ["securityscan"], REQ)
        .obj("p"),
        [MakePod().Name("p1").Node("nodeA").Labels({"foo": "bar"})],
        [
            ("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            ("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        [unresolvable(AFF), unresolvable(AFF)],
    ),
    multi_case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        MakePod().PodAntiAffinityIn("foo", "region", ["abc"], REQ).obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": "abc"})],
        [host("nodeA", region="r1"), host("nodeB", region="r1")],
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    multi_case(
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        MakePod()
        .PodAntiAffinityIn("foo", "region", ["abc"], REQ)
        .PodAntiAffinityIn("service", "zone", ["securityscan"], REQ)
        .obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": "abc", "service": "securityscan"})],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    multi_case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        MakePod().PodAntiAffinityIn("foo", "region", ["abc"], REQ).obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": "abc"})],
        [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)],
        [unschedulable(ANTI), unschedulable(ANTI), SUCCESS],
    ),
    multi_case(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        MakePod()
        .Namespace("NS1")
        .Labels({"foo": "123"})
        .PodAntiAffinityIn("foo", "region", ["bar"], REQ)
        .obj("p"),
        [
            MakePod().Node("nodeA").Namespace("NS1").Labels({"foo": "bar"}),
            MakePod().Node("nodeC").Namespace("NS2").PodAntiAffinityIn("foo", "region", ["123"], REQ),
        ],
        [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)],
        [unschedulable(ANTI), unschedulable(ANTI), SUCCESS],
    ),
    multi_case(
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
        MakePod().Label("foo", "").obj("p"),
        [MakePod().Node("nodeA").PodAntiAffinityExists("foo", "invalid-node-label", REQ)],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z1")],
        [SUCCESS, SUCCESS],
        pre("Skip"),
    ),
    multi_case(
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
        MakePod().Node("nodeA").PodAntiAffinityExists("foo", "invalid-node-label", REQ).obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": ""})],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z1")],
        [SUCCESS, SUCCESS],
    ),
    multi_case(
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
        MakePod().Label("foo", "").Label("bar", "").obj("p"),
        [
            MakePod().Node("nodeA").PodAntiAffinityExists("foo", "zone", REQ),
            MakePod().Node("nodeA").PodAntiAffinityExists("bar", "region", REQ),
        ],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(EXISTING), unschedulable(EXISTING)],
    ),
    multi_case(
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
        MakePod()
        .PodAntiAffinityExists("foo", "zone", REQ)
        .PodAntiAffinityExists("bar", "region", REQ)
        .obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": ""}), MakePod().Node("nodeB").Labels({"bar": ""})],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    multi_case(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod().Label("foo", "").Label("bar", "").obj("p"),
        [
            MakePod()
            .Node("nodeA")
            .PodAntiAffinityExists("foo", "invalid-node-label", REQ)
            .PodAntiAffinityExists("bar", "zone", REQ)
        ],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(EXISTING), SUCCESS],
    ),
    multi_case(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        MakePod()
        .PodAntiAffinityExists("foo", "invalid-node-label", REQ)
        .PodAntiAffinityExists("bar", "zone", REQ)
        .obj("p"),
        [MakePod().Name("podA").Node("nodeA").Labels({"foo": "", "bar": ""})],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(ANTI), SUCCESS],
    ),
    multi_case(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod().Label("foo", "").Label("bar", "").obj("p"),
        [
            MakePod()
            .Node("nodeA")
            .PodAntiAffinityExists("foo", "region", REQ)
            .PodAntiAffinityExists("bar", "zone", REQ)
        ],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(EXISTING), unschedulable(EXISTING)],
    ),
    multi_case(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        MakePod()
        .PodAntiAffinityExists("foo", "region", REQ)
        .PodAntiAffinityExists("bar", "zone", REQ)
        .obj("p"),
        [MakePod().Node("nodeA").Labels({"foo": "", "bar": ""})],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unschedulable(ANTI), unschedulable(ANTI)],
    ),
    multi_case(
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        MakePod().Label("foo", "").Label("bar", "").obj("p"),
        [
            MakePod()
            .Node("nodeA")
            .PodAntiAffinityExists("foo", "zone", REQ)
            .PodAntiAffinityExists("labelA", "zone", REQ),
            MakePod()
            .Node("nodeB")
            .PodAntiAffinityExists("bar", "zone", REQ)
            .PodAntiAffinityExists("labelB", "zone", REQ),
        ],
        [
            host("nodeA", region="r1", zone="z1"),
            host("nodeB", region="r1", zone="z2"),
            host("nodeC", region="r1", zone="z3"),
        ],
        [unschedulable(EXISTING), unschedulable(EXISTING), SUCCESS],
    ),
    multi_case(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
        MakePod().PodAffinityExists("foo", "region", REQ).PodAffinityExists("bar", "zone", REQ).obj("p"),
        [MakePod().Name("pod1").Labels({"foo": "", "bar": ""}).Node("nodeA")],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z1")],
        [SUCCESS, SUCCESS],
    ),
    multi_case(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
        MakePod().PodAffinityExists("foo", "region", REQ).PodAffinityExists("bar", "zone", REQ).obj("p"),
        [
            MakePod().Node("nodeA").Name("pod1").Labels({"foo": ""}),
            MakePod().Node("nodeB").Name("pod2").Labels({"bar": ""}),
        ],
        [host("nodeA", region="r1", zone="z1"), host("nodeB", region="r1", zone="z2")],
        [unresolvable(AFF), unresolvable(AFF)],
    ),
]

# ------------------------------------------------------------------ TestPreferredAffinity
AZ1, AZ2 = {"az": "az1"}, {"az": "az2"}
S1, S2 = {"security": "S1"}, {"security": "S2"}


def pref_aff(*terms: Obj) -> Obj:
    return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def pref_anti(*terms: Obj) -> Obj:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}


STAY_S1_REGION = pref_aff(weighted(5, term(sel(expr("security", "In", ["S1"])), "region")))
STAY_S2_REGION = pref_aff(weighted(6, term(sel(expr("security", "In", ["S2"])), "region")))
AFFINITY3 = pref_aff(
    weighted(8, term(sel(expr("security", "NotIn", ["S1"]), expr("security", "In", ["S2"])), "region")),
    weighted(2, term(sel(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region")),
)
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term(sel(expr("security", "In", ["S1", "value2"])), "region"),
            term(sel(expr("security", "Exists"), expr("wrongkey", "DoesNotExist")), "region"),
        ]
    }
}
AWAY_S1_AZ = pref_anti(weighted(5, term(sel(expr("security", "In", ["S1"])), "az")))
AWAY_S2_AZ = pref_anti(weighted(5, term(sel(expr("security", "In", ["S2"])), "az")))
STAY_S1_REGION_AWAY_S2_AZ = {
    **pref_aff(weighted(8, term(sel(expr("security", "In", ["S1"])), "region"))),
    **pref_anti(weighted(5, term(sel(expr("security", "In", ["S2"])), "az"))),
}
AFFINITY_NS_SELECTOR = pref_aff(
    weighted(5, term(sel(expr("security", "In", ["S1"])), "region", ["subteam2.team2"], TEAM1_SEL))
)
ANTI_AFFINITY_NS_SELECTOR = pref_anti(
    weighted(5, term(sel(expr("security", "In", ["S1"])), "region", ["subteam2.team2"], TEAM1_SEL))
)


def scored(
    name: str,
    p: Obj,
    pods: list[Obj],
    nodes: list[tuple[str, dict[str, str]]],
    want: list[int] | None,
    args: Obj,
    prefix: str,
    skip: bool = False,
) -> Obj:
    c: Obj = {
        "name": f"{prefix}/{name}",
        "kind": "score",
        "args": args,
        "namespaces": NAMESPACES,
        "pod": p,
        "nodes": [node(n, labels) for n, labels in nodes],
        "existingPods": pods,
    }
    if skip:
        # Upstream asserts PreScore's Skip over all nodes; a skipped plugin scores every node 0 here.
        c["expectedPreScore"] = SKIP
        c["expected"] = {n: 0 for n, _ in nodes}
    else:
        assert want is not None
        c["expectedPreScore"] = {"code": "Success", "reasons": []}
        c["expected"] = {n: w for (n, _), w in zip(nodes, want, strict=True)}
    return c


def preferred(
    name: str,
    p: Obj,
    pods: list[Obj],
    nodes: list[tuple[str, dict[str, str]]],
    want: list[int] | None = None,
    ignore: bool = False,
    skip: bool = False,
) -> Obj:
    args = {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore}
    return scored(name, p, pods, nodes, want, args, "TestPreferredAffinity", skip)


def ep(
    i: int,
    node_name: str,
    labels: dict[str, str] | None = None,
    affinity: Obj | None = None,
    namespace: str = "",
) -> Obj:
    return raw_pod(f"e{i}", namespace, labels, node_name, affinity)


def eps(*specs: tuple[Any, ...]) -> list[Obj]:
    return [ep(i, *s) for i, s in enumerate(specs)]


def incoming(labels: dict[str, str] | None = None, affinity: Obj | None = None, namespace: str = "") -> Obj:
    return raw_pod("p", namespace, labels, affinity=affinity)


CHINA_INDIA_AZ1 = [("node1", RG_CHINA), ("node2", RG_INDIA), ("node3", AZ1)]
M = 100
preferred_cases = [
    preferred(
        "all nodes are same priority as Affinity is nil",
        incoming(S1),
        [],
        CHINA_INDIA_AZ1,
        skip=True,
    ),
    preferred(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",
        incoming(S1, STAY_S1_REGION),
        eps(("node1", S1), ("node2", S2), ("node3", S1)),
        CHINA_INDIA_AZ1,
        [M, 0, 0],
    ),
    preferred(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
        incoming(None, STAY_S1_REGION),
        eps(("node1", S1)),
        [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)],
        [M, M, 0],
    ),
    preferred(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
        incoming(S1, STAY_S2_REGION),
        eps(("node1", S2), ("node1", S2), ("node2", S2), ("node3", S2), ("node4", S2), ("node5", S2)),
        [
            ("node1", RG_CHINA),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ],
        [M, 0, M, M, 0],
    ),
    preferred(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
        incoming(S1, AFFINITY3),
        eps(("node1", S1), ("node2", S2), ("node3", S1)),
        CHINA_INDIA_AZ1,
        [20, M, 0],
    ),
    preferred(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        incoming(S2),
        eps(("node1", S1, STAY_S1_REGION), ("node2", S2, STAY_S2_REGION)),
        CHINA_INDIA_AZ1,
        [0, M, 0],
    ),
    preferred(
        "Affinity symmetry with namespace selector",
        incoming(S1, None, "subteam1.team1"),
        eps(("node1", S1, AFFINITY_NS_SELECTOR), ("node2", S2, STAY_S2_REGION)),
        CHINA_INDIA_AZ1,
        [M, 0, 0],
    ),
    preferred(
        "AntiAffinity symmetry with namespace selector",
        incoming(S1, None, "subteam1.team1"),
        eps(("node1", S1, ANTI_AFFINITY_NS_SELECTOR), ("node2", S2, STAY_S2_REGION)),
        CHINA_INDIA_AZ1,
        [0, M, M],
    ),
    preferred(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        incoming(S1),
        eps(("node1", S1, HARD_AFFINITY), ("node2", S2, HARD_AFFINITY)),
        CHINA_INDIA_AZ1,
        [M, M, 0],
    ),
    preferred(
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        incoming(S1, AWAY_S1_AZ),
        eps(("node1", S1), ("node2", S2)),
        [("node1", AZ1), ("node2", RG_CHINA)],
        [0, M],
    ),
    preferred(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
        incoming(S1, AWAY_S1_AZ),
        eps(("node1", S1), ("node2", S1)),
        [("node1", AZ1), ("node2", RG_CHINA)],
        [0, M],
    ),
    preferred(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
        incoming(S1, AWAY_S1_AZ),
        eps(("node1", S1), ("node1", S1), ("node2", S2)),
        [("node1", AZ1), ("node2", RG_INDIA)],
        [0, M],
    ),
    preferred(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        incoming(S2),
        eps(("node1", S1, AWAY_S2_AZ), ("node2", S2, AWAY_S1_AZ)),
        [("node1", AZ1), ("node2", AZ2)],
        [0, M],
    ),
    preferred(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        incoming(S1, STAY_S1_REGION_AWAY_S2_AZ),
        eps(("node1", S1), ("node2", S1)),
        [("node1", RG_CHINA), ("node2", AZ1)],
        [M, 0],
    ),
    preferred(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
        incoming(S1, STAY_S1_REGION_AWAY_S2_AZ),
        eps(
            ("node1", S1),
            ("node1", S1),
            ("node2", S1),
            ("node3", S1),
            ("node3", S1),
            ("node4", S1),
            ("node5", S1),
        ),
        [
            ("node1", RG_CHINA_AZ1),
            ("node2", RG_INDIA),
            ("node3", RG_CHINA),
            ("node4", RG_CHINA),
            ("node5", RG_INDIA),
        ],
        [M, 0, M, M, 0],
    ),
    preferred(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        incoming(S1, STAY_S1_REGION_AWAY_S2_AZ),
        eps(
            ("node1", S1),
            ("node2", S2),
            ("node3", None, STAY_S1_REGION_AWAY_S2_AZ),
            ("node4", None, AWAY_S1_AZ),
        ),
        [("node1", RG_CHINA), ("node2", AZ1), ("node3", RG_INDIA), ("node4", AZ2)],
        [M, 0, M, 0],
    ),
    preferred(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        incoming(S1),
        eps(("node1", S1), ("node2", None, STAY_S1_REGION_AWAY_S2_AZ)),
        [("node1", RG_CHINA), ("node2", RG_CHINA)],
        [0, 0],
    ),
    preferred(
        "Affinity with pods matching NamespaceSelector",
        incoming(S1, AFFINITY_NS_SELECTOR, "subteam1.team1"),
        eps(
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team2"),
            ("node2", S1, None, "subteam2.team1"),
        ),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        [M, 0],
    ),
    preferred(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        incoming(S1, AFFINITY_NS_SELECTOR, "subteam1.team1"),
        eps(
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam2.team2"),
            ("node2", S1, None, "subteam2.team1"),
        ),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        [M, 0],
    ),
    preferred(
        "Affinity with pods matching NamespaceSelector (anti-affinity)",
        incoming(S1, ANTI_AFFINITY_NS_SELECTOR, "subteam1.team1"),
        eps(
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team2"),
            ("node2", S1, None, "subteam2.team1"),
        ),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        [0, M],
    ),
    preferred(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)",
        incoming(S1, ANTI_AFFINITY_NS_SELECTOR, "subteam1.team1"),
        eps(
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam1.team1"),
            ("node1", S1, None, "subteam2.team2"),
            ("node2", S1, None, "subteam2.team1"),
        ),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        [0, M],
    ),
    preferred(
        "Ignore preferred terms of existing pods",
        incoming(S2),
        eps(("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), ("node2", S2, STAY_S2_REGION)),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        ignore=True,
        skip=True,
    ),
    preferred(
        "Do not ignore preferred terms of existing pods",
        incoming(S2),
        eps(("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), ("node2", S2, STAY_S2_REGION)),
        [("node1", RG_CHINA), ("node2", RG_INDIA)],
        [0, M],
    ),
    preferred("No nodes to score", incoming(S2), [], [], skip=True),
]

# ------------------------------------------------------------------ TestPreferredAffinityWithHardPodAffinitySymmetricWeight
SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term(sel(expr("service", "In", ["S1"])), "region", ["", "subteam2.team2"], TEAM1_SEL)
        ]
    }
}


def symmetric(
    name: str, namespace: str, weight: int, want: list[int] | None = None, skip: bool = False
) -> Obj:
    return scored(
        name,
        incoming(SERVICE_S1, None, namespace),
        eps(("node1", None, HARD_POD_AFFINITY), ("node2", None, HARD_POD_AFFINITY)),
        CHINA_INDIA_AZ1,
        want,
        {"hardPodAffinityWeight": weight},
        "TestPreferredAffinityWithHardPodAffinitySymmetricWeight",
        skip,
    )


symmetric_cases = [
    symmetric("with default weight", "", 1, [M, M, 0]),
    symmetric("with zero weight", "", 0, skip=True),
    symmetric("with no matching namespace", "subteam1.team2", 1, skip=True),
    symmetric("with matching NamespaceSelector", "subteam1.team1", 1, [M, M, 0]),
    symmetric("with matching Namespaces", "subteam2.team2", 1, [M, M, 0]),
]

SKIPPED = [
    {
        "name": "TestPreferredAffinity/invalid Affinity fails PreScore, invalid AntiAffinity fails PreScore",
        "why": "upstream asserts the Error code and a substring of the message only; translated in "
        "tests/plugins/interpodaffinity/test_upstream_states.py",
    },
    {
        "name": "TestPreFilterStateAddRemovePod, TestGetTPMapMatchingIncomingAffinityAntiAffinity, "
        "TestPreFilterStateClone, TestPreFilterDisabled",
        "why": "assert PreFilter's internal topology-pair maps or its missing-state error, not a filter "
        "result; translated in tests/plugins/interpodaffinity/test_upstream_states.py",
    },
    {
        "name": "Test_isSchedulableAfterPodChange, Test_isSchedulableAfterNodeChange (plugin_test.go)",
        "why": "queueing hints; translated in tests/plugins/interpodaffinity/test_hints.py",
    },
    {
        "name": "TestPodAffinitySignature (plugin_test.go)",
        "why": "pod signatures (opportunistic batching) are not implemented by Harmonic's framework",
    },
]

if __name__ == "__main__":
    write(
        "InterPodAffinity",
        "pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go (TestRequiredAffinitySingleNode, "
        "TestRequiredAffinityMultipleNodes) and scoring_test.go (TestPreferredAffinity, "
        "TestPreferredAffinityWithHardPodAffinitySymmetricWeight), kubernetes/kubernetes",
        single_cases + multi_cases + preferred_cases + symmetric_cases,
        SKIPPED,
    )
