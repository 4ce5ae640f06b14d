"""POST /v1/feedback's core: authentication, validation naming the field, size limit, rate limit."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmonic.signals.feedback.intake import FeedbackIntake, parse
from harmonic.signals.feedback.observation import MAX_VALUE

NOW = 1_700_000_000.0
AUTH = "Bearer s3cret"


def body(**fields: object) -> bytes:
    doc: dict[str, object] = {"namespace": "shop", "workload": "cart", "metric": "p99_ms", "value": 12.5}
    doc.update(fields)
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def intake(**kw: object) -> tuple[FeedbackIntake, Clock]:
    clock = Clock()
    return FeedbackIntake("s3cret", clock=clock, **kw), clock  # type: ignore[arg-type]


def test_accepted_post_is_queued_with_its_fields():
    fi, _ = intake()
    code, doc, _ = fi.handle(AUTH, body(timestamp="2023-11-14T22:13:00Z", goal="maximize"))
    assert (code, doc) == (202, {"accepted": 1})
    [p] = fi.drain()
    assert (p.namespace, p.workload, p.pod, p.metric, p.value, p.goal) == (
        "shop",
        "cart",
        "",
        "p99_ms",
        12.5,
        "maximize",
    )
    assert p.timestamp == pytest.approx(1699999980.0)
    assert fi.drain() == []


def test_timestamp_defaults_to_receipt_and_pods_are_an_identity():
    p = parse(body(workload=..., pod="cart-7d9c-x2x"), NOW)
    assert p.timestamp == NOW and p.identity == "shop/cart-7d9c-x2x"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"not json", "body"),
        (b"[1, 2]", "body"),
        (body(extra=1), "extra"),
        (body(namespace=...), "namespace"),
        (body(namespace="Shop_1"), "namespace"),
        (body(pod="cart-1"), "workload"),  # both workload and pod
        (body(workload=...), "workload"),  # neither
        (body(metric="p99 latency"), "metric"),
        (body(value=...), "value"),
        (body(value="fast"), "value"),
        (body(value=True), "value"),
        (body(value=-3.0), "value"),  # a negative latency
        (body(value=1e308), "value"),  # absurd
        (b'{"namespace": "shop", "workload": "cart", "metric": "m", "value": NaN}', "value"),
        (b'{"namespace": "shop", "workload": "cart", "metric": "m", "value": Infinity}', "value"),
        (body(goal="best"), "goal"),
        (body(timestamp="yesterday"), "timestamp"),
        (body(timestamp=NOW + 3600), "timestamp"),  # from the future
        (body(timestamp=NOW - 3 * 86400), "timestamp"),  # replayed
    ],
)
def test_malformed_posts_get_400_naming_the_field_and_change_nothing(raw, field):
    fi, _ = intake()
    code, doc, _ = fi.handle(AUTH, raw)
    assert code == 400 and doc["field"] == field, doc
    assert fi.drain() == [] and fi.rejected == {400: 1}


@pytest.mark.parametrize("auth", ["", "Bearer wrong", "Basic s3cret", "s3cret"])
def test_unauthenticated_posts_get_401_and_change_nothing(auth):
    fi, _ = intake()
    code, _, headers = fi.handle(auth, body())
    assert code == 401 and headers["WWW-Authenticate"] == "Bearer"
    assert fi.drain() == []


def test_oversized_bodies_get_413():
    fi, _ = intake(max_body_bytes=100)
    code, _, _ = fi.handle(AUTH, body(metric="m" * 150))
    assert code == 413 and fi.drain() == []


def test_a_flood_is_rate_limited_per_identity():
    fi, clock = intake(rate_per_second=1.0, burst=5)
    codes = [fi.handle(AUTH, body())[0] for _ in range(8)]
    assert codes == [202] * 5 + [429] * 3
    code, _, headers = fi.handle(AUTH, body())
    assert code == 429 and int(headers["Retry-After"]) >= 1
    # another workload has its own budget
    assert fi.handle(AUTH, body(workload="checkout"))[0] == 202
    # and the flooder gets tokens back with time
    clock.t += 2.0
    assert [fi.handle(AUTH, body())[0] for _ in range(3)] == [202, 202, 429]
    assert len(fi.drain()) == 5 + 1 + 2


def test_settings_are_validated():
    with pytest.raises(ValueError, match="rate_per_second"):
        FeedbackIntake("t", rate_per_second=0)


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=20)))
def test_only_finite_non_negative_bounded_values_are_accepted(value):
    """Whatever an application sends as its value, the intake either refuses it or queues a finite
    number in [0, 1e12]; json.dumps writes NaN and Infinity as Python's json module reads them."""
    fi, _ = intake()
    code, _, _ = fi.handle(AUTH, body(value=value))
    queued = fi.drain()
    if code == 202:
        [p] = queued
        assert math.isfinite(p.value) and 0 <= p.value <= MAX_VALUE
    else:
        assert code == 400 and queued == []
