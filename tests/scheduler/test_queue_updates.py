"""Updates of unschedulable pods: only changes a rejecting plugin's queueing hint cares about send them
back to be retried (a status written by the scheduler itself does not)."""

from harmonic.api.pod import parse_pod
from harmonic.plugins.noderesourcesfit import NodeResourcesFit, NodeResourcesFitArgs
from harmonic.plugins.prioritysort import PrioritySort
from harmonic.scheduler.clock import ManualClock
from harmonic.scheduler.queue import SchedulingQueue
from harmonic.testing import pod


def unschedulable_queue():
    fit = NodeResourcesFit(NodeResourcesFitArgs(), None)
    q = SchedulingQueue(
        PrioritySort(None, None),
        ManualClock(),
        hints={"default-scheduler": {"NodeResourcesFit": fit.events_to_register()}},
    )
    q.add(parse_pod(pod("p").req(cpu="1").obj()))
    qp = q.pop()
    qp.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable(qp)
    return q


def test_a_status_only_update_keeps_the_pod_unschedulable():
    q = unschedulable_queue()
    q.update(None, parse_pod(pod("p").req(cpu="1").nominated("n1").obj()))
    assert q.counts()["unschedulable"] == 1
    assert q.pending_pods()[0].pod.nominated_node_name == "n1"


def test_a_spec_update_retries_the_pod():
    q = unschedulable_queue()
    q.update(None, parse_pod(pod("p").req(cpu="500m").obj()))
    assert q.counts()["unschedulable"] == 0
