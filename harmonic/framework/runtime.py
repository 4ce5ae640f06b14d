"""A profile's plugins wired to extension points and run in kube-scheduler's order (frameworkImpl)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from harmonic.api.pod import Pod
from harmonic.framework.config import Profile
from harmonic.framework.cycle_state import CycleState
from harmonic.framework.decisions import ScoreDetail
from harmonic.framework.diagnosis import Diagnosis, FilterOutcome
from harmonic.framework.events import EventWithHint
from harmonic.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PluginError,
    PodNominator,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from harmonic.framework.preemption import Evaluator, Preempting
from harmonic.framework.registry import Registry
from harmonic.framework.services import NOMINATOR, check_needs
from harmonic.framework.snapshot import Snapshot
from harmonic.framework.status import Code, Status

log = logging.getLogger(__name__)
P = TypeVar("P", bound=Plugin)

#: Longest a Permit plugin may make a pod wait (maxTimeout).
MAX_PERMIT_TIMEOUT = 15 * 60.0
#: Plugin kinds whose rejections events can undo (shouldHaveEnqueueExtensions).
_REJECTING_KINDS = (PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, ReservePlugin, PermitPlugin)
#: Indexed by a filter's status code: True for codes a Filter may not return (anything but Success,
#: Unschedulable, UnschedulableAndUnresolvable, Pending).
_NOT_A_REJECTION = np.array(
    [
        c not in (Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)
        for c in Code
    ]
)


class ExtensionPointRecorder:
    """Receives timings of extension points and plugins (metrics); the default records nothing.

    Extension points are timed on every call (except Filter, which upstream does not time as a whole
    either); plugins only in the scheduling cycles ``sample_plugins`` picks, because timing every
    plugin call costs more than the plugins themselves (upstream samples 10 % of cycles).
    """

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        return None

    def plugin(self, point: str, plugin: str, status: str, seconds: float) -> None:
        return None

    def sample_plugins(self, state: CycleState) -> bool:
        return False


def _wire(st: Status | None) -> str:
    return "Success" if st is None else st.code.wire_name


def _verdicts_status(v: Any) -> str:
    if v is None or not len(v.code):
        return "Success"
    return Code(int(v.code.max())).wire_name


#: Framework method -> (extension point label, where its Status is in the result).
_POINTS: dict[str, tuple[str, Callable[[Any], Status | None]]] = {
    "run_pre_filter": ("PreFilter", lambda r: r[1]),
    "run_post_filter": ("PostFilter", lambda r: r[1]),
    "run_pre_score": ("PreScore", lambda r: r),
    "run_score": ("Score", lambda r: r[2]),
    "run_reserve": ("Reserve", lambda r: r),
    "run_unreserve": ("Unreserve", lambda r: None),
    "run_permit": ("Permit", lambda r: r[0]),
    "run_pre_bind": ("PreBind", lambda r: r),
    "run_bind": ("Bind", lambda r: r),
    "run_post_bind": ("PostBind", lambda r: None),
}
#: Plugin method -> (extension point label, its status label from the result).
_PLUGIN_POINTS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "pre_filter": ("PreFilter", lambda r: _wire(r[1])),
    "filter": ("Filter", _verdicts_status),
    "post_filter": ("PostFilter", lambda r: _wire(r[1])),
    "pre_score": ("PreScore", _wire),
    "score": ("Score", lambda r: "Success"),
    "normalize_score": ("ScoreExtensionNormalize", lambda r: "Success"),
    "reserve": ("Reserve", _wire),
    "unreserve": ("Unreserve", lambda r: "Success"),
    "permit": ("Permit", lambda r: _wire(r[0])),
    "pre_bind": ("PreBind", _wire),
    "bind": ("Bind", _wire),
    "post_bind": ("PostBind", lambda r: "Success"),
}


def instrument(fw: Framework, recorder: ExtensionPointRecorder) -> None:
    """Time ``fw``'s extension points and (sampled) plugin calls into ``recorder``, by wrapping the
    bound methods of this framework and its plugin instances; nothing is wrapped without a recorder."""
    for method, (point, status_of) in _POINTS.items():
        setattr(fw, method, _timed_point(getattr(fw, method), fw.name, point, status_of, recorder))
    for pl in fw.plugins.values():
        for method, (point, label_of) in _PLUGIN_POINTS.items():
            fn = getattr(pl, method, None)
            if fn is not None:
                setattr(pl, method, _timed_plugin(fn, pl.name, point, label_of, recorder))


def _timed_point(
    fn: Callable[..., Any],
    profile: str,
    point: str,
    status_of: Callable[[Any], Status | None],
    rec: ExtensionPointRecorder,
) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        r = fn(*args, **kwargs)
        rec.extension_point(profile, point, _wire(status_of(r)), time.perf_counter() - t0)
        return r

    return timed


def _timed_plugin(
    fn: Callable[..., Any],
    plugin: str,
    point: str,
    label_of: Callable[[Any], str],
    rec: ExtensionPointRecorder,
) -> Callable[..., Any]:
    def timed(state: CycleState, *args: Any, **kwargs: Any) -> Any:
        if not rec.sample_plugins(state):
            return fn(state, *args, **kwargs)
        t0 = time.perf_counter()
        r = fn(state, *args, **kwargs)
        rec.plugin(point, plugin, label_of(r), time.perf_counter() - t0)
        return r

    return timed


_NO_SLOTS = np.zeros(0, dtype=np.int64)


@dataclass(slots=True)
class Evaluation:
    """A pod evaluated on given nodes by PreFilter then Filter (``Framework.evaluate``). Positions index
    ``slots``."""

    state: CycleState
    slots: np.ndarray
    #: PreFilter's status when it rejected every node or failed (then nothing else ran); None if it passed.
    pre_filter: Status | None = None
    #: Positions PreFilter's result (PreFilterResult.NodeNames) left out, and the plugins that narrowed.
    excluded: np.ndarray = field(default_factory=lambda: _NO_SLOTS)
    narrowing: Collection[str] = ()
    #: Positions that reached Filter, and Filter's outcome over ``slots[candidates]``.
    candidates: np.ndarray = field(default_factory=lambda: _NO_SLOTS)
    outcome: FilterOutcome | None = None
    #: A Filter plugin's Error status (the outcome is then incomplete).
    error: Status | None = None

    @property
    def passed(self) -> np.ndarray:
        """Whether each of ``slots`` passed PreFilter and every Filter."""
        out = np.zeros(len(self.slots), dtype=bool)
        if self.outcome is not None and self.error is None:
            out[self.candidates[self.outcome.codes == 0]] = True
        return out


class Framework:
    """One profile: its plugin instances per extension point and the code that runs them."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        handle: Handle,
        recorder: ExtensionPointRecorder | None = None,
    ) -> None:
        self.profile = profile
        self.name = profile.scheduler_name
        self.handle = handle
        self.plugins: dict[str, Plugin] = {}
        classes = {name: profile.plugin_classes.get(name) or registry[name] for name in profile.plugin_names}
        check_needs(
            self.name,
            ((name, cls.needs(profile.args[name])) for name, cls in classes.items()),
            handle.service_map(),
        )
        for name, cls in classes.items():
            self.plugins[name] = cls(profile.args[name], handle)

        def at(point: str, kind: type[P]) -> list[P]:
            out = []
            for n in profile.plugins_at(point):
                pl = self.plugins[n]
                assert isinstance(pl, kind)
                out.append(pl)
            return out

        self.pre_enqueue_plugins = at("preEnqueue", PreEnqueuePlugin)
        self.queue_sort_plugin = at("queueSort", QueueSortPlugin)[0]
        self.pre_filter_plugins = at("preFilter", PreFilterPlugin)
        self.filter_plugins = at("filter", FilterPlugin)
        self.filter_names = [p.name for p in self.filter_plugins]
        self.post_filter_plugins = at("postFilter", PostFilterPlugin)
        self.pre_score_plugins = at("preScore", PreScorePlugin)
        self.score_plugins = at("score", ScorePlugin)
        self.score_weights = [profile.weights[p.name] for p in self.score_plugins]
        self.reserve_plugins = at("reserve", ReservePlugin)
        self.permit_plugins = at("permit", PermitPlugin)
        self.pre_bind_plugins = at("preBind", PreBindPlugin)
        self.bind_plugins = at("bind", BindPlugin)
        self.post_bind_plugins = at("postBind", PostBindPlugin)
        self._nominated_key: tuple[int, int, str, int] | None = None
        self._nominated: tuple[dict[int, str], np.ndarray, dict[int, list[Pod]]] = ({}, np.zeros(0, bool), {})
        if recorder is not None:
            instrument(self, recorder)

    # ------------------------------------------------------------------ queue
    def events_to_register(self) -> dict[str, Sequence[EventWithHint]]:
        """Events per plugin for the queue's hints. Only plugins that can reject a pod take part
        (PreEnqueue, PreFilter, Filter, Reserve, Permit), as in fillEnqueueExtensions."""
        return {
            name: pl.events_to_register()
            for name, pl in self.plugins.items()
            if isinstance(pl, _REJECTING_KINDS)
        }

    def run_pre_enqueue(self, pod: Pod, first: str = "") -> Status | None:
        """PreEnqueue plugins until one rejects the pod; ``first`` (the plugin that gated it last time)
        runs before the others. The rejecting status names its plugin."""
        plugins = self.pre_enqueue_plugins
        if first and len(plugins) > 1:
            plugins = sorted(plugins, key=lambda pl: pl.name != first)
        for pl in plugins:
            st = pl.pre_enqueue(pod)
            if st is not None and not st.is_success:
                st.plugin = pl.name
                return st
        return None

    # ------------------------------------------------------------------ filtering
    def run_pre_filter(
        self, state: CycleState, pod: Pod, snap: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """RunPreFilterPlugins. Returns the merged node subset, the status, and the plugins that narrowed
        the node set (they count as having rejected the pod, and name the nodes left out).

        UnschedulableAndUnresolvable or Error stops at once; Unschedulable lets the remaining plugins
        run (preemption needs their state) and the last such status is returned; Skip marks the
        plugin's Filter as skipped for this cycle. Subsets that intersect to nothing make the pod
        UnschedulableAndUnresolvable with no single plugin to blame."""
        result: PreFilterResult | None = None
        narrowing: set[str] = set()
        rejected: Status | None = None
        for pl in self.pre_filter_plugins:
            try:
                r, st = pl.pre_filter(state, pod, snap)
            except PluginError as e:
                st, r = Status(Code.ERROR, str(e)), None
            if st is not None and not st.is_success:
                if st.code == Code.SKIP:
                    state.skip_filter.add(pl.name)
                    continue
                st.plugin = pl.name
                if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, st, set()
                if st.code == Code.UNSCHEDULABLE:
                    rejected = st
                    continue
                msg = f'running PreFilter plugin "{pl.name}": {st.message}'
                return None, Status(Code.ERROR, msg, plugin=pl.name), set()
            if r is not None and r.node_names is not None:
                narrowing.add(pl.name)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    names = sorted(narrowing)
                    msg = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), narrowing
        return result, rejected, narrowing

    def run_filters(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray
    ) -> tuple[FilterOutcome, Status | None]:
        """Filter plugins over ``slots`` in order, each seeing only the nodes every earlier one passed
        (RunFilterPlugins stops at a node's first failure). An Error from any plugin aborts the cycle."""
        n = len(slots)
        codes = np.zeros(n, dtype=np.int8)
        plugin_ids = np.zeros(n, dtype=np.int16)
        reason_ids = np.zeros(n, dtype=np.int32)
        table: list[tuple[str, ...]] = []
        index: dict[tuple[str, ...], int] = {}
        remaining = np.arange(n)
        outcome = FilterOutcome(slots, codes, plugin_ids, reason_ids, table, self.filter_names)
        for k, pl in enumerate(self.filter_plugins):
            if len(remaining) == 0:
                break
            if pl.name in state.skip_filter:
                continue
            try:
                v = pl.filter(state, pod, snap, slots[remaining] if len(remaining) != n else slots)
            except PluginError as e:
                return outcome, Status(Code.ERROR, f'running "{pl.name}" filter plugin: {e}', plugin=pl.name)
            if v is None:
                continue
            failed = v.code != 0
            if not failed.any():
                continue
            # Filters may only pass or reject; anything else is an error that fails the cycle.
            err = _NOT_A_REJECTION[v.code]
            if err.any():
                i = int(np.argmax(err))
                msg = ", ".join(v.reasons[int(v.reason[i])])
                return outcome, Status(
                    Code.ERROR, f'running "{pl.name}" filter plugin: {msg}', plugin=pl.name
                )
            at = remaining[failed]
            codes[at] = v.code[failed]
            plugin_ids[at] = k
            remap = np.fromiter(
                (index.setdefault(r, len(index)) for r in v.reasons), dtype=np.int32, count=len(v.reasons)
            )
            reason_ids[at] = remap[v.reason[failed]]
            remaining = remaining[~failed]
        table.extend(sorted(index, key=index.__getitem__))
        return outcome, None

    # ------------------------------------------------------------------ nominated pods, PreFilter extensions
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, added: Pod, slot: int
    ) -> Status | None:
        """AddPod of every PreFilter plugin with extensions that did not Skip (RunPreFilterExtensionAddPod)."""
        return self._run_extension("AddPod", state, pod, added, slot)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, removed: Pod, slot: int
    ) -> Status | None:
        """RemovePod of every PreFilter plugin with extensions that did not Skip."""
        return self._run_extension("RemovePod", state, pod, removed, slot)

    def _run_extension(self, op: str, state: CycleState, pod: Pod, other: Pod, slot: int) -> Status | None:
        for pl in self.pre_filter_plugins:
            if not pl.has_extensions or pl.name in state.skip_filter:
                continue
            try:
                if op == "AddPod":
                    st = pl.add_pod(state, pod, other, slot)
                else:
                    st = pl.remove_pod(state, pod, other, slot)
            except PluginError as e:
                st = Status(Code.ERROR, str(e))
            if st is not None and not st.is_success:
                # Go's %q quotes the plugin name with double quotes.
                msg = f'running {op} on PreFilter plugin "{pl.name}": {st.message}'
                return Status(Code.ERROR, msg, plugin=pl.name)
        return None

    def filters_node_local(self, state: CycleState) -> bool:
        """True when no PreFilter plugin that ran keeps AddPod/RemovePod-maintained cluster-wide state, so
        a node's filter verdict depends only on ``state`` and that node's row of the snapshot: hypothetical
        pods may then be added to or removed from many nodes at once and all of them filtered together."""
        return not any(
            pl.has_extensions and pl.name not in state.skip_filter for pl in self.pre_filter_plugins
        )

    def nominated_pods_on(self, snap: Snapshot, pod: Pod, slots: np.ndarray) -> dict[int, list[Pod]]:
        """Pods nominated to the nodes at ``slots`` with priority >= ``pod``'s, ``pod`` itself excluded."""
        nominator = self._nominator()
        if nominator is None or len(nominator) == 0:
            return {}
        # Filtering asks many times per cycle (and per preemption dry-run round): derive the nominated
        # slots once per state of the nominations and nodes, and each slot's pods once per pod.
        key = (nominator.version, snap.node_generation, pod.uid, pod.priority)
        if self._nominated_key != key:
            names = {snap.slot_of[n]: n for n in nominator.nodes() if snap.has_node(n)}
            mask = np.zeros(snap.capacity, dtype=bool)
            mask[list(names)] = True
            self._nominated = (names, mask, {})
            self._nominated_key = key
        names, mask, memo = self._nominated
        out: dict[int, list[Pod]] = {}
        for s in slots[mask[slots]].tolist():
            pods = memo.get(s)
            if pods is None:
                pods = memo[s] = [
                    p
                    for p in nominator.nominated_pods_for_node(names[s])
                    if p.priority >= pod.priority and p.uid != pod.uid
                ]
            if pods:
                out[s] = pods
        return out

    def run_filters_with_nominated_pods(
        self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray
    ) -> tuple[FilterOutcome, Status | None]:
        """RunFilterPluginsWithNominatedPods: a node with nominated pods of equal or higher priority must
        pass the filters twice, once as if those pods ran there (added in place, with AddPod on a cloned
        state) and once without them, since they may still go elsewhere. Other nodes are filtered once."""
        nominated = self.nominated_pods_on(snap, pod, slots)
        if not nominated:
            return self.run_filters(state, pod, snap, slots)
        is_special = np.zeros(snap.capacity, dtype=bool)
        is_special[list(nominated)] = True
        is_special = is_special[slots]
        parts: list[tuple[np.ndarray, FilterOutcome]] = []
        plain_at = np.flatnonzero(~is_special)
        if len(plain_at):
            out, st = self.run_filters(state, pod, snap, slots[plain_at])
            if st is not None:
                return out, st
            parts.append((plain_at, out))
        special_at = np.flatnonzero(is_special)
        if self.filters_node_local(state):
            st = self._filter_nominated_together(state, pod, snap, slots, special_at, nominated, parts)
        else:
            st = self._filter_nominated_one_by_one(state, pod, snap, slots, special_at, nominated, parts)
        if st is not None:
            return self._merge(slots, []), st
        return self._merge(slots, parts), None

    def _filter_nominated_together(
        self,
        state: CycleState,
        pod: Pod,
        snap: Snapshot,
        slots: np.ndarray,
        at: np.ndarray,
        nominated: dict[int, list[Pod]],
        parts: list[tuple[np.ndarray, FilterOutcome]],
    ) -> Status | None:
        added = _add_in_place(snap, [(int(s), nominated[int(s)]) for s in slots[at]])
        try:
            with_pods, st = self.run_filters(state, pod, snap, slots[at])
        finally:
            _remove_in_place(snap, added)
        if st is not None:
            return st
        parts.append((at, with_pods))
        passed = at[with_pods.codes == 0]
        if len(passed):
            without, st = self.run_filters(state, pod, snap, slots[passed])
            if st is not None:
                return st
            parts.append((passed, without))
        return None

    def _filter_nominated_one_by_one(
        self,
        state: CycleState,
        pod: Pod,
        snap: Snapshot,
        slots: np.ndarray,
        at: np.ndarray,
        nominated: dict[int, list[Pod]],
        parts: list[tuple[np.ndarray, FilterOutcome]],
    ) -> Status | None:
        for i in at.tolist():
            slot = int(slots[i])
            one = slots[i : i + 1]
            copy = state.clone()
            added = _add_in_place(snap, [(slot, nominated[slot])])
            try:
                st = None
                for _, p in added:
                    st = self.run_pre_filter_extension_add_pod(copy, pod, p, slot)
                    if st is not None:
                        break
                if st is None:
                    with_pods, st = self.run_filters(copy, pod, snap, one)
            finally:
                _remove_in_place(snap, added)
            if st is not None:
                return st
            parts.append((np.asarray([i]), with_pods))
            if with_pods.codes[0] == 0:
                without, st = self.run_filters(state, pod, snap, one)
                if st is not None:
                    return st
                parts.append((np.asarray([i]), without))
        return None

    def _merge(self, slots: np.ndarray, parts: list[tuple[np.ndarray, FilterOutcome]]) -> FilterOutcome:
        """One outcome aligned with ``slots`` from outcomes of subsets (positions into ``slots``)."""
        n = len(slots)
        codes = np.zeros(n, dtype=np.int8)
        plugin_ids = np.zeros(n, dtype=np.int16)
        reason_ids = np.zeros(n, dtype=np.int32)
        index: dict[tuple[str, ...], int] = {}
        for pos, out in parts:
            failed = out.codes != 0
            if not failed.any():
                continue
            remap = np.fromiter(
                (index.setdefault(r, len(index)) for r in out.reasons), dtype=np.int32, count=len(out.reasons)
            )
            at = pos[failed]
            codes[at] = out.codes[failed]
            plugin_ids[at] = out.plugin_ids[failed]
            reason_ids[at] = remap[out.reason_ids[failed]]
        table = sorted(index, key=index.__getitem__)
        return FilterOutcome(slots, codes, plugin_ids, reason_ids, table, self.filter_names)

    def _nominator(self) -> PodNominator | None:
        return self.handle.optional_service(NOMINATOR)

    def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter plugins until one succeeds or errors (RunPostFilterPlugins). A rejecting plugin's
        result (a nomination to set or clear) is kept unless a later one gives another."""
        reasons: list[str] = []
        rejector = ""
        kept: PostFilterResult | None = None
        for pl in self.post_filter_plugins:
            result, st = pl.post_filter(state, pod, diagnosis)
            if st is None or st.is_success:
                return result, None
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, st.with_plugin(pl.name)
            if st.code != Code.UNSCHEDULABLE:
                return None, Status(Code.ERROR, st.message, plugin=pl.name)
            if result is not None:
                kept = result
            reasons.extend(st.reasons)
            rejector = rejector or pl.name
        if not self.post_filter_plugins:
            return None, None
        return kept, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    def preemption_evaluators(self) -> list[Evaluator]:
        """The evaluators of the PostFilter plugins that preempt, in the order PostFilter runs them."""
        return [pl.evaluator for pl in self.post_filter_plugins if isinstance(pl, Preempting)]

    # ------------------------------------------------------------------ evaluating a pod on given nodes
    def evaluate(self, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Evaluation:
        """PreFilter, then Filter on those of ``slots`` PreFilter's result keeps: "may this pod run on
        these nodes", as the extender's filter verb and the rescheduler's what-if ask it (no nominated
        pods, no percentageOfNodesToScore: every given node is evaluated)."""
        ev = Evaluation(CycleState(), slots)
        pre, st, narrowing = self.run_pre_filter(ev.state, pod, snap)
        if st is not None:
            ev.pre_filter = st
            return ev
        candidates = np.arange(len(slots))
        kept = pre_filter_kept(pre, snap)
        if kept is not None:
            inside = kept[slots]
            ev.excluded, ev.narrowing = np.flatnonzero(~inside), narrowing
            candidates = np.flatnonzero(inside)
        ev.candidates = candidates
        if len(candidates) == 0:
            return ev
        ev.outcome, ev.error = self.run_filters(ev.state, pod, snap, slots[candidates])
        return ev

    def score_nodes(
        self,
        state: CycleState,
        pod: Pod,
        snap: Snapshot,
        slots: np.ndarray,
        detail: ScoreDetail | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], Status | None]:
        """PreScore then Score (with NormalizeScore and weights) of ``slots``, after ``evaluate``."""
        st = self.run_pre_score(state, pod, snap, slots)
        if st is not None:
            return np.zeros(len(slots), dtype=np.int64), {}, st
        return self.run_score(state, pod, snap, slots, detail)

    def run_pre_score(self, state: CycleState, pod: Pod, snap: Snapshot, slots: np.ndarray) -> Status | None:
        for pl in self.pre_score_plugins:
            try:
                st = pl.pre_score(state, pod, snap, slots)
            except PluginError as e:
                st = Status(Code.ERROR, str(e))
            if st is not None and not st.is_success:
                if st.code == Code.SKIP:
                    state.skip_score.add(pl.name)
                    continue
                return Status(
                    Code.ERROR, f'running PreScore plugin "{pl.name}": {st.message}', plugin=pl.name
                )
        return None

    def run_score(
        self,
        state: CycleState,
        pod: Pod,
        snap: Snapshot,
        slots: np.ndarray,
        detail: ScoreDetail | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], Status | None]:
        """RunScorePlugins: Score, then NormalizeScore, of every plugin not skipped at PreScore, then the
        range check and weights. Returns the weighted total per slot and each plugin's weighted scores;
        ``detail`` (decision recording) also receives each plugin's scores before and after normalising."""
        total = np.zeros(len(slots), dtype=np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        plugins = [
            (pl, w)
            for pl, w in zip(self.score_plugins, self.score_weights, strict=True)
            if pl.name not in state.skip_score
        ]
        raw: list[np.ndarray] = []
        for pl, _ in plugins:
            try:
                raw.append(np.asarray(pl.score(state, pod, snap, slots), dtype=np.int64))
            except PluginError as e:
                msg = f'running Score plugins: plugin "{pl.name}" failed with: {e}'
                return total, per_plugin, Status(Code.ERROR, msg, plugin=pl.name)
        if detail is not None:
            detail.plugins = [pl.name for pl, _ in plugins]
            detail.weights = [w for _, w in plugins]
            # Copies: a NormalizeScore may rewrite its input in place.
            detail.raw = [r.copy() for r in raw]
        for i, (pl, _) in enumerate(plugins):
            if not pl.has_normalize:
                continue
            try:
                raw[i] = np.asarray(pl.normalize_score(state, pod, snap, slots, raw[i]), dtype=np.int64)
            except PluginError as e:
                msg = f'running Normalize on Score plugins: plugin "{pl.name}" failed with: {e}'
                return total, per_plugin, Status(Code.ERROR, msg, plugin=pl.name)
        if detail is not None:
            detail.normalized = list(raw)
        if not raw or not len(slots):
            return total, {pl.name: scores for (pl, _), scores in zip(plugins, raw, strict=True)}, None
        m = np.stack(raw)
        if m.min() < MIN_NODE_SCORE or m.max() > MAX_NODE_SCORE:
            for (pl, _), scores in zip(plugins, raw, strict=True):
                bad_at = (scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)
                if bad_at.any():
                    msg = (
                        f'applying score defaultWeights on Score plugins: plugin "{pl.name}" returns an '
                        f"invalid score {int(scores[bad_at][0])}, it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    )
                    return total, per_plugin, Status(Code.ERROR, msg, plugin=pl.name)
        weighted = m * np.array([w for _, w in plugins], dtype=np.int64)[:, None]
        for i, (pl, _) in enumerate(plugins):
            per_plugin[pl.name] = weighted[i]
        return weighted.sum(axis=0), per_plugin, None

    # ------------------------------------------------------------------ reserve / permit / bind
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.reserve_plugins:
            st = pl.reserve(state, pod, node_name)
            if st is not None and not st.is_success:
                if st.is_rejected:
                    st.plugin = pl.name
                    return st
                msg = f'running Reserve plugin "{pl.name}": {st.message}'
                return Status(Code.ERROR, msg, plugin=pl.name)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            pl.unreserve(state, pod, node_name)

    def run_permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[Status | None, dict[str, float]]:
        """(status, {plugin: timeout}) — status WAIT when any plugin asked to wait."""
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            st, timeout = pl.permit(state, pod, node_name)
            if st is None or st.is_success:
                continue
            if st.is_rejected:
                st.plugin = pl.name
                return st, {}
            if st.code == Code.WAIT:
                waits[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                continue
            msg = f'running Permit plugin "{pl.name}": {st.message}'
            return Status(Code.ERROR, msg, plugin=pl.name), {}
        if waits:
            msg = f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
            return Status(Code.WAIT, msg), waits
        return None, {}

    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.pre_bind_plugins:
            st = pl.pre_bind(state, pod, node_name)
            if st is not None and not st.is_success:
                if st.code == Code.SKIP:
                    continue
                if st.is_rejected:
                    st.plugin = pl.name
                    return st
                msg = f'running PreBind plugin "{pl.name}": {st.message}'
                return Status(Code.ERROR, msg, plugin=pl.name)
        return None

    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self.bind_plugins:
            st = pl.bind(state, pod, node_name)
            if st is not None and st.code == Code.SKIP:
                continue
            if st is not None and not st.is_success:
                if st.is_rejected:
                    st.plugin = pl.name
                    return st
                msg = f'running Bind plugin "{pl.name}": {st.message}'
                return Status(Code.ERROR, msg, plugin=pl.name)
            return None
        return Status(Code.SKIP, "no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)

    def plugin(self, name: str) -> Any:
        return self.plugins[name]


def pre_filter_kept(pre: PreFilterResult | None, snap: Snapshot) -> np.ndarray | None:
    """Per slot, whether PreFilter's merged node subset (PreFilterResult.NodeNames) keeps the node; None
    when no plugin named a subset (every node is kept). Names of nodes the snapshot lacks are ignored."""
    if pre is None or pre.node_names is None:
        return None
    keep = np.zeros(snap.capacity, dtype=bool)
    keep[[snap.slot_of[n] for n in pre.node_names if snap.has_node(n)]] = True
    return keep


def _add_in_place(snap: Snapshot, per_slot: list[tuple[int, list[Pod]]]) -> list[tuple[int, Pod]]:
    """Account pods on nodes of the shared snapshot for a what-if evaluation; ``_remove_in_place`` undoes
    it (pods appended last, removed again, so each node's pod order is unchanged afterwards)."""
    added = [(slot, p) for slot, pods in per_slot for p in pods if p.uid not in snap.pods[slot]]
    snap.add_pods_at(added)
    return added


def _remove_in_place(snap: Snapshot, added: list[tuple[int, Pod]]) -> None:
    snap.remove_pods_at(added)
