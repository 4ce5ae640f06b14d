"""The extender verbs, answered by a profile's ``Framework`` — the same plugins and extension-point code
the scheduler runs, no second scheduling path. HTTP lives in ``server.py``; this module maps request
bodies to response bodies.

What each verb runs (kube-scheduler calls the extender after its own Filter plugins, with the nodes
that passed them, and calls prioritize with the nodes that passed every filter):

- ``filter``: PreFilter, then every Filter plugin over *all* the candidate nodes (kube-scheduler
  already sampled them; there is no percentageOfNodesToScore here). A PreFilter rejection fails every
  node with its status; nodes a PreFilter result excludes fail as unresolvable with "node(s) didn't
  satisfy plugin(s) [...]". Unschedulable nodes go to ``FailedNodes``, UnschedulableAndUnresolvable
  ones to ``FailedAndUnresolvableNodes`` (preemption skips those); the value is the status message,
  which kube-scheduler counts in its "0/N nodes are available: ..." line. An Error status becomes
  the response's ``Error``.
- ``prioritize``: PreFilter (its CycleState only: Score plugins may read it, as inside kube-scheduler's
  own cycle; its verdict is ignored, the nodes were already filtered), PreScore and Score with
  NormalizeScore and weights, then the weighted total is mapped to the extender range, see
  ``extender_scores``. A failure is HTTP 500: ``HostPriorityList`` has no error field, and
  kube-scheduler then just ignores this extender's scores for the pod.
- ``preempt``: the profile's own preemption on the candidate nodes kube-scheduler proposes (its
  DefaultPreemption picked their victims, blind to Harmonic's plugins). Where the profile rejects the
  pod (Unschedulable), the profile's preempting PostFilter plugins, in order, run the dry run
  ``harmonic run`` would (``Evaluator.candidates_on``: the same eligibility check and victim selection,
  every proposed node, nothing evicted), and the first that finds victims answers with its own victims
  per node (the extender protocol lets an extender change them). So CapacityScheduling reclaims borrowed
  quota, or frees its namespace's quota, exactly as in-process. Nodes where no victims help are dropped,
  as are those the profile rejects as UnschedulableAndUnresolvable. Where the profile already accepts
  the pod (kube-scheduler's own filters did not), kube-scheduler's victims are kept if the pod still
  passes without them; a profile without preemption judges every node that way.
- ``bind``: the profile's Bind plugins (``DefaultBinder`` binds through the cluster client), then the
  pod is accounted on its node in the cache at once, so the next filter call already sees it.

Which nodes and pods the plugins see:

- With a ``ClusterCache`` (informer-fed; required by ``nodeCacheCapable: true``): every node and every
  bound pod in the cluster, as the cache last heard of them. Requests that carry full ``Nodes`` are
  answered from the cache too (their objects only name the candidates; nodes the cache does not know
  yet fail as resolvable, ``NODE_NOT_CACHED``).
- Without a cache (``nodeCacheCapable: false`` and no cluster access): exactly the request's nodes and
  **no pods at all**. Filters and scores that depend on running pods then see empty nodes:
  NodeResourcesFit counts no requested resources, NodePorts no used ports, InterPodAffinity and
  PodTopologySpread no matching pods; whole-cluster aggregates (topology domains, ImageLocality's
  spread) cover only the candidates. ``preempt`` then has nothing to judge and returns the candidates
  unchanged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from itertools import compress
from typing import Any

import numpy as np

from harmonic.api import casefold
from harmonic.api.errors import ObjectError
from harmonic.api.node import Node, parse_node
from harmonic.api.pod import Pod, parse_pod
from harmonic.extender import wire
from harmonic.extender.cache import ClusterCache
from harmonic.extender.wire import MAX_EXTENDER_PRIORITY, WireError
from harmonic.framework.config import SchedulerConfiguration
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.decisions import (
    RESULT_ERROR,
    RESULT_FILTERED,
    RESULT_PRIORITIZED,
    DecisionLog,
    DecisionTrace,
    ScoreDetail,
)
from harmonic.framework.handle import ProfileHandle
from harmonic.framework.interface import MAX_NODE_SCORE, Clock, ClusterClient, RefusingClient
from harmonic.framework.registry import Registry
from harmonic.framework.runtime import Evaluation, Framework
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status
from harmonic.plugins.interpodaffinity.terms import pod_terms
from harmonic.scheduler.clock import RealClock
from harmonic.scheduler.podlister import SERVICE_NAME as PODS_SERVICE
from harmonic.signals.feedback.placement import PlacementView

log = logging.getLogger(__name__)

NODE_NOT_CACHED = "node(s) were not yet known to the Harmonic extender's cache"
NODE_UNREADABLE = "node(s) could not be read by the Harmonic extender"
_MEMO_MIN = 10_000


class ExtenderError(RuntimeError):
    """A request that was well-formed but could not be answered (HTTP 500 where the verb has no
    ``Error`` field)."""


def extender_scores(total: np.ndarray, weight_sum: int) -> np.ndarray:
    """Weighted framework totals mapped to the extender range 0..MaxExtenderPriority (10).

    kube-scheduler adds ``score * weight * (MaxNodeScore / MaxExtenderPriority)`` — the extender's
    score times its configured ``weight`` times 10 — to each node's total. So the extender should
    answer, per node, its profile's weighted *mean* score (0..100, over the plugins that scored: those
    whose PreScore returned Skip take no part) divided by 10: the extender then weighs in like one more
    kube-scheduler Score plugin of weight ``weight`` whose score is Harmonic's opinion. The division
    rounds half away from zero (Go's ``math.Round``), so the value kube-scheduler reconstructs,
    ``score * 10``, is within 5 of Harmonic's 0..100 score; truncating would bias every node down by
    4.5 on average. Scores are absolute, not rescaled to the best candidate, so a node's contribution
    does not depend on which other nodes were sent with it. No score plugin ran: 0 for every node.
    """
    if weight_sum <= 0 or len(total) == 0:
        return np.zeros(len(total), dtype=np.int64)
    step = weight_sum * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)  # even, so step // 2 is exact
    return np.clip((total + step // 2) // step, 0, MAX_EXTENDER_PRIORITY)


class _RequestNodes:
    """The snapshot of a cache-less extender: exactly the nodes of the current request, no pods.

    One ``Snapshot`` object is kept and brought to each request's node set (nodes added, changed,
    removed), so plugins that index it incrementally stay correct and consecutive requests with the
    same nodes cost little. Parsed nodes are memoised by (uid, resourceVersion).
    """

    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self._current: dict[str, tuple[str, str] | None] = {}
        self._memo: dict[tuple[str, str], Node] = {}
        #: Nodes of the current request left out because they cannot be compiled: name -> why.
        self.refused: dict[str, str] = {}

    def sync(self, items: list[wire.NodeItem]) -> None:
        wanted = {it.name for it in items}
        for name in [n for n in self._current if n not in wanted]:
            self.snapshot.remove_node(name)
            del self._current[name]
        for name in [n for n in self.refused if n not in wanted]:
            del self.refused[name]
        if len(self._memo) > max(_MEMO_MIN, 4 * len(items)):
            self._memo.clear()
        for i, it in enumerate(items):
            if it.key is not None and self._current.get(it.name, ()) == it.key:
                continue
            node = self._memo.get(it.key) if it.key is not None else None
            if node is None:
                try:
                    node = parse_node(it.manifest())
                except (ObjectError, ValueError) as e:
                    self._refuse(it.name, f"Nodes.items[{i}]: {e}")
                    continue
                if it.key is not None:
                    self._memo[it.key] = node
            self.refused.pop(it.name, None)
            self.snapshot.set_node(node)
            self._current[it.name] = it.key

    def _refuse(self, name: str, why: str) -> None:
        """Leave out a node that cannot be compiled (kube-apiserver stores a capacity of 1e100, say):
        the other nodes are still answered, as the scheduler ignores such a node. One error line per
        node and error, not one per request."""
        if name in self._current:
            self.snapshot.remove_node(name)
            del self._current[name]
        if self.refused.get(name) != why:
            log.error("ignoring node %s: %s", name, why)
            self.refused[name] = why


class Extender:
    """The extender verbs over one ``SchedulerConfiguration``.

    ``profile`` names the profile every pod is evaluated with; without it a pod uses the profile named
    by its ``spec.schedulerName`` when there is one, else the configuration's first profile.
    """

    def __init__(
        self,
        config: SchedulerConfiguration,
        registry: Registry,
        *,
        cache: ClusterCache | None = None,
        client: ClusterClient | None = None,
        profile: str | None = None,
        services: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        # Keys in any case are folded with tables from the generated API models: build them now,
        # not in the first request.
        casefold.prepare("V1Pod", "V1Node")
        self.config = config
        self.cache = cache
        self.client: ClusterClient = client or RefusingClient(
            "the Harmonic extender has no cluster client (start it with cluster access to bind)"
        )
        self.clock: Clock = clock or RealClock()
        self.services: dict[str, Any] = dict(services or {})
        if cache is not None:
            self.services.setdefault(PODS_SERVICE, cache.pods)
        self._request_nodes = _RequestNodes() if cache is None else None
        self._lock = cache.lock if cache is not None else threading.RLock()
        self._resolved: tuple[list[str], Snapshot, int, tuple[list[str], np.ndarray, list[str]]] | None = None
        self._last_pod: tuple[dict[str, Any], Pod] | None = None
        self.frameworks = {
            p.scheduler_name: Framework(p, registry, self._handle(p.scheduler_name)) for p in config.profiles
        }
        if profile is not None and profile not in self.frameworks:
            known = ", ".join(self.frameworks)
            raise ValueError(f"--profile {profile!r}: no such profile in {config.source} (profiles: {known})")
        self.pinned = profile
        self.default = self.frameworks[profile or config.profiles[0].scheduler_name]
        #: Where filter and prioritize calls are recorded (None: not recorded).
        self.decisions: DecisionLog | None = None

    def _handle(self, profile: str) -> ProfileHandle:
        """The handle of a profile's plugins: the extender's snapshot, client, clock and services; no pod
        ever waits at Permit here."""
        return ProfileHandle(
            profile,
            snapshot=lambda: self.snapshot,
            client=lambda: self.client,
            clock=lambda: self.clock,
            runner=lambda: self.frameworks[profile],
            services=self.services,
        )

    @property
    def snapshot(self) -> Snapshot:
        if self.cache is not None:
            return self.cache.snapshot
        assert self._request_nodes is not None
        return self._request_nodes.snapshot

    @property
    def ready(self) -> bool:
        """No cache, or a cache that has synced and is being kept current."""
        return self.cache is None or (self.cache.synced and not self.cache.stale())

    def on_state(self, fn: Callable[[PlacementView], None]) -> None:
        """Run ``fn`` with the current placement, under the cache's lock (the feedback loop)."""
        with self._lock:
            fn(PlacementView(self.snapshot))

    def framework_for(self, pod: Pod) -> Framework:
        if self.pinned is None:
            fw = self.frameworks.get(pod.scheduler_name)
            if fw is not None:
                return fw
        return self.default

    # ================================================================== filter
    def filter(self, body: bytes) -> bytes:
        args, pod, fw = self._request(body)
        with self._lock:
            try:
                known, slots, unknown, trace = self._open(args, "extender/filter", fw, pod)
            except ExtenderError as e:
                return wire.encode_filter_result(error=str(e))
            passed_mask, failed, unresolvable, err = self._run_filter(fw, pod, slots, known, trace)
        if trace is not None:
            self._record(trace, RESULT_ERROR if err else RESULT_FILTERED, err)
        if err:
            return wire.encode_filter_result(error=err)
        refused = self._request_nodes.refused if self._request_nodes is not None else {}
        for name in unknown:
            if name in refused:
                # No preemption makes such a node usable.
                unresolvable[name] = f"{NODE_UNREADABLE}: {refused[name]}"
            else:
                failed[name] = NODE_NOT_CACHED
        passed = known if passed_mask.all() else list(compress(known, passed_mask.tolist()))
        if args.nodes is not None:
            keep = set(passed)
            return wire.encode_filter_result(
                passed_nodes=[it.raw for it in args.nodes if it.name in keep],
                failed=failed,
                unresolvable=unresolvable,
            )
        return wire.encode_filter_result(passed=passed, failed=failed, unresolvable=unresolvable)

    def _request(self, body: bytes) -> tuple[wire.ExtenderArgs, Pod, Framework]:
        """A filter or prioritize body: its arguments, its pod, and the profile that evaluates the pod."""
        args = wire.decode_args(body)
        pod = self._pod(args.pod)
        return args, pod, self.framework_for(pod)

    def _open(
        self, args: wire.ExtenderArgs, source: str, fw: Framework, pod: Pod
    ) -> tuple[list[str], np.ndarray, list[str], DecisionTrace | None]:
        """Under the lock: bring the snapshot to the request (``ExtenderError`` if it cannot answer), then
        its nodes as ``_resolve`` gives them, and the trace to record the verb in (None: not recorded)."""
        self._prepare(args)
        known, slots, unknown = self._resolve(args.names)
        return known, slots, unknown, self._trace(source, fw, pod)

    def _pod(self, manifest: dict[str, Any]) -> Pod:
        """The compiled pod of a filter or prioritize request. The wire hands back the same manifest for
        the same bytes (the pod of a filter and of its prioritize), so it is compiled once for both."""
        last = self._last_pod
        if last is not None and last[0] is manifest:
            return last[1]
        pod = _parse_pod(manifest, "Pod")
        self._last_pod = (manifest, pod)
        return pod

    def _trace(self, source: str, fw: Framework, pod: Pod) -> DecisionTrace | None:
        if self.decisions is None:
            return None
        return DecisionTrace(source, fw.name, pod.key, pod.uid, self.clock.now(), self.snapshot.names())

    def _record(self, trace: DecisionTrace, result: str, message: str) -> None:
        assert self.decisions is not None
        trace.result, trace.message = result, message
        self.decisions.add(trace)

    def _prepare(self, args: wire.ExtenderArgs) -> None:
        """Bring the snapshot to the request (cache-less) or check the cache can answer (else
        ``ExtenderError``)."""
        if self.cache is None:
            if args.nodes is None:
                raise ExtenderError(
                    "this Harmonic extender has no cluster cache, so it cannot answer a request with node "
                    "names only: set nodeCacheCapable: false, or run the extender with cluster access"
                )
            assert self._request_nodes is not None
            self._request_nodes.sync(args.nodes)
        elif not self.cache.synced:
            raise ExtenderError("the Harmonic extender's cluster cache has not synced yet")

    def _resolve(self, names: list[str]) -> tuple[list[str], np.ndarray, list[str]]:
        """(known names, their slots, unknown names), each name once, in request order.

        Remembered for the last list (by identity: the wire hands back the same list for the same
        bytes) until a node is added or removed (``node_generation``): resolving 5,000 names is a
        dict lookup each, most of a prioritize call's own time otherwise."""
        snap = self.snapshot
        last = self._resolved
        if last is not None and last[0] is names and last[1] is snap and last[2] == snap.node_generation:
            return last[3]
        resolved = self._resolve_now(names)
        self._resolved = (names, snap, snap.node_generation, resolved)
        return resolved

    def _resolve_now(self, names: list[str]) -> tuple[list[str], np.ndarray, list[str]]:
        snap = self.snapshot
        uniq = list(dict.fromkeys(names)) if len(set(names)) != len(names) else names
        slot_of = snap.slot_of
        slots = np.asarray([slot_of.get(n, -1) for n in uniq], dtype=np.int64)
        ok = slots >= 0
        ok[ok] = snap.live[slots[ok]]
        if ok.all():
            return uniq, slots, []
        known_at = np.flatnonzero(ok).tolist()
        unknown = [uniq[i] for i in np.flatnonzero(~ok).tolist()]
        return [uniq[i] for i in known_at], slots[ok], unknown

    def _run_filter(
        self,
        fw: Framework,
        pod: Pod,
        slots: np.ndarray,
        names: list[str],
        trace: DecisionTrace | None = None,
    ) -> tuple[np.ndarray, dict[str, str], dict[str, str], str]:
        """(passed per slot, FailedNodes, FailedAndUnresolvableNodes, error text)."""
        snap = self.snapshot
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        passed = np.zeros(len(slots), dtype=bool)
        if trace is not None:
            trace.all_nodes = len(slots)
        if len(slots) == 0:
            return passed, failed, unresolvable, ""
        ev = fw.evaluate(pod, snap, slots)
        st = ev.pre_filter
        if trace is not None:
            trace.pre_filter = st
        if st is not None:
            if st.code == Code.ERROR:
                return passed, failed, unresolvable, st.message
            target = unresolvable if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            target.update(dict.fromkeys(names, st.message))
            return passed, failed, unresolvable, ""
        candidates = ev.candidates
        if ev.narrowing:
            msg = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(ev.narrowing))}]"
            unresolvable.update(dict.fromkeys((names[i] for i in ev.excluded.tolist()), msg))
            if trace is not None:
                excluded = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
                trace.excluded, trace.excluded_slots = (len(ev.excluded), excluded), slots[ev.excluded]
        if ev.error is not None:
            return passed, failed, unresolvable, ev.error.message
        outcome = ev.outcome
        if outcome is None:
            return passed, failed, unresolvable, ""
        ok = outcome.codes == 0
        passed[candidates[ok]] = True
        if trace is not None:
            trace.outcomes, trace.evaluated, trace.feasible = [outcome], len(candidates), slots[passed]
        messages = [", ".join(r) for r in outcome.reasons]
        for i in np.flatnonzero(~ok).tolist():
            name = names[int(candidates[i])]
            msg = messages[int(outcome.reason_ids[i])]
            if outcome.codes[i] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable[name] = msg
            else:
                failed[name] = msg
        return passed, failed, unresolvable, ""

    # ================================================================== prioritize
    def prioritize(self, body: bytes) -> bytes:
        args, pod, fw = self._request(body)
        names = args.names
        with self._lock:
            known, slots, _, trace = self._open(args, "extender/prioritize", fw, pod)
            try:
                scores = self._run_score(fw, pod, slots, trace)
            except ExtenderError as e:
                if trace is not None:
                    self._record(trace, RESULT_ERROR, str(e))
                raise
        if trace is not None:
            self._record(trace, RESULT_PRIORITIZED, "")
        if known is names:
            return wire.encode_host_priorities(names, scores)
        by_name = dict(zip(known, scores.tolist(), strict=True))
        return wire.encode_host_priorities(names, [by_name.get(n, 0) for n in names])

    def _run_score(
        self, fw: Framework, pod: Pod, slots: np.ndarray, trace: DecisionTrace | None = None
    ) -> np.ndarray:
        if trace is not None:
            trace.all_nodes = trace.evaluated = len(slots)
            trace.feasible = slots
        if len(slots) == 0:
            return np.zeros(0, dtype=np.int64)
        snap = self.snapshot
        state = CycleState()
        _, st, _ = fw.run_pre_filter(state, pod, snap)
        if st is not None and st.code == Code.ERROR:
            raise ExtenderError(st.message)
        detail = ScoreDetail() if trace is not None else None
        total, per_plugin, st = fw.score_nodes(state, pod, snap, slots, detail)
        if st is not None:
            raise ExtenderError(st.message)
        if trace is not None:
            trace.score, trace.total = detail, total
        weight_sum = sum(fw.profile.weights[name] for name in per_plugin)
        return extender_scores(total, weight_sum)

    # ================================================================== preempt
    def preempt(self, body: bytes) -> bytes:
        args = wire.decode_preemption_args(body)
        pod = _parse_pod(args.pod, "Pod")
        fw = self.framework_for(pod)
        if self.cache is None:
            return wire.encode_preemption_result(args.victims)
        with self._lock:
            if not self.cache.synced:
                raise ExtenderError("the Harmonic extender's cluster cache has not synced yet")
            snap = self.snapshot
            nodes = [n for n in sorted(args.victims) if snap.has_node(n)]
            kept = self._run_preempt(fw, pod, snap, nodes, args.victims)
        return wire.encode_preemption_result(kept)

    def _run_preempt(
        self, fw: Framework, pod: Pod, snap: Snapshot, nodes: list[str], proposed: Mapping[str, wire.Victims]
    ) -> dict[str, wire.Victims]:
        """The candidates to answer: on nodes the profile rejects the pod, its own preemption's victims
        (``Evaluator.candidates_on``, the dry run ``harmonic run`` makes); on nodes it accepts,
        kube-scheduler's victims if the pod still fits without them."""
        evaluators = fw.preemption_evaluators()
        if not evaluators:
            return {n: proposed[n] for n in nodes if self._fits_without(fw, pod, snap, n, proposed[n].uids)}
        # The nominated node's status decides whether the pod may preempt again (PodEligibleToPreemptOthers):
        # evaluate it too when kube-scheduler did not propose it.
        nominated = pod.nominated_node_name
        order = nodes + ([nominated] if nominated not in proposed and snap.has_node(nominated) else [])
        slots = np.asarray([snap.slot_of[n] for n in order], dtype=np.int64)
        ev = fw.evaluate(pod, snap, slots)
        codes = _filter_codes(ev)
        nominated_code = (
            Code(int(codes[order.index(nominated)]))
            if nominated in order
            else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )
        codes = codes[: len(nodes)]
        kept = {
            n: proposed[n]
            for n, code in zip(nodes, codes.tolist(), strict=True)
            if code == 0 and self._fits_without(fw, pod, snap, n, proposed[n].uids)
        }
        rejected = slots[: len(nodes)][codes == Code.UNSCHEDULABLE]
        for evaluator in evaluators:
            candidates, st = evaluator.candidates_on(ev.state, pod, rejected, nominated_code)
            if st is not None and st.code == Code.ERROR:
                raise ExtenderError(st.message)
            if candidates:
                for c in candidates:
                    kept[c.node] = wire.Victims(tuple(p.uid for p in c.victims), c.num_pdb_violations)
                break
        return kept

    def _fits_without(self, fw: Framework, pod: Pod, snap: Snapshot, node: str, uids: Iterable[str]) -> bool:
        """Whether ``pod`` passes PreFilter and Filter on ``node`` once ``uids`` are gone from it."""
        slot = snap.slot_of[node]
        on_node = snap.pods[slot]
        removed = [on_node[u] for u in dict.fromkeys(uids) if u in on_node]
        for p in removed:
            snap.remove_pod(p, node)
        try:
            return bool(_filter_codes(fw.evaluate(pod, snap, np.asarray([slot], dtype=np.int64)))[0] == 0)
        finally:
            for p in removed:
                snap.add_pod(p, node)

    # ================================================================== bind
    def bind(self, body: bytes) -> bytes:
        """Blocking (API call): the server runs it off its event loop."""
        args = wire.decode_binding_args(body)
        pod = self.cache.pending_pod(args.pod_uid) if self.cache is not None and args.pod_uid else None
        if pod is None or pod.name != args.pod_name or pod.namespace != args.pod_namespace:
            pod = _pod_ref(args)
        fw = self.framework_for(pod)
        st = fw.run_bind(CycleState(), pod, args.node)
        if st is not None:
            return wire.encode_binding_result(st.message or f"binding rejected ({st.code.wire_name})")
        if self.cache is not None:
            self.cache.assume(pod, args.node)
        return wire.encode_binding_result()


def _filter_codes(ev: Evaluation) -> np.ndarray:
    """The Filter status code of each evaluated node, as the Diagnosis of a scheduling cycle would hold
    it: 0 where the pod passes, PreFilter's code on every node it rejected, UnschedulableAndUnresolvable
    on the nodes its result left out. An Error raises ``ExtenderError``."""
    error = ev.error or (
        ev.pre_filter if ev.pre_filter is not None and ev.pre_filter.code == Code.ERROR else None
    )
    if error is not None:
        raise ExtenderError(error.message)
    if ev.pre_filter is not None:
        return np.full(len(ev.slots), int(ev.pre_filter.code), dtype=np.int8)
    codes = np.full(len(ev.slots), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), dtype=np.int8)
    if ev.outcome is not None:
        codes[ev.candidates] = ev.outcome.codes
    return codes


def _parse_pod(raw: Mapping[str, Any], field: str) -> Pod:
    try:
        pod = parse_pod(raw)
        # Pod (anti-)affinity is compiled lazily by its plugin, whose failure would be a 500 from
        # prioritize: compile it here (it is cached on the pod) so a malformed term is the client's 400.
        error = pod_terms(pod).error
    except (ObjectError, ValueError) as e:
        raise WireError(f"{field}: {e}") from None
    if error:
        raise WireError(f"{field}: spec.affinity: {error}")
    return pod


def _pod_ref(args: wire.BindingArgs) -> Pod:
    """The pod as the binding names it (name, namespace, uid): all a Binding needs, when the cache does
    not hold the pending pod itself."""
    meta: dict[str, Any] = {"name": args.pod_name, "namespace": args.pod_namespace}
    if args.pod_uid:
        meta["uid"] = args.pod_uid
    return parse_pod({"metadata": meta, "spec": {"containers": [{"name": "ref"}]}})
