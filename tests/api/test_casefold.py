"""Keys folded to the API's spelling as Go's encoding/json matches them."""

from __future__ import annotations

import pytest

from harmonic.api.casefold import canonical


@pytest.mark.parametrize(
    ("given", "model", "want"),
    [
        ({"Metadata": {"NAME": "p"}}, "V1Pod", {"metadata": {"name": "p"}}),
        # Maps are data: their keys stay as written.
        ({"metadata": {"Labels": {"App": "x"}}}, "V1Pod", {"metadata": {"labels": {"App": "x"}}}),
        ({"spec": {"NodeSelector": {"Disk": "ssd"}}}, "V1Pod", {"spec": {"nodeSelector": {"Disk": "ssd"}}}),
        (
            {"spec": {"CONTAINERS": [{"Resources": {"Requests": {"CPU": "1"}}}]}},
            "V1Pod",
            {"spec": {"containers": [{"resources": {"requests": {"CPU": "1"}}}]}},
        ),
        # The exact spelling wins over a folded duplicate, whatever the order.
        ({"SPEC": {"nodeName": "a"}, "spec": {"nodeName": "b"}}, "V1Pod", {"spec": {"nodeName": "b"}}),
        ({"spec": {"nodeName": "b"}, "Spec": {"nodeName": "a"}}, "V1Pod", {"spec": {"nodeName": "b"}}),
        # Keys no field has are kept (and ignored downstream); wrong types are left to the parsers.
        ({"bogus": 1, "spec": "x"}, "V1Pod", {"bogus": 1, "spec": "x"}),
        ({"Status": {"Allocatable": {"cpu": "2"}}}, "V1Node", {"status": {"allocatable": {"cpu": "2"}}}),
        ("not an object", "V1Pod", "not an object"),
    ],
)
def test_canonical(given, model, want):
    assert canonical(given, model) == want
