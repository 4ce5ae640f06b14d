import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import label_selector, node_selector

LABELS = {"app": "web", "tier": "front", "gen": "5"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ({}, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "db"}}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False),
        ({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}],
            },
            False,
        ),
    ],
)
def test_label_selector(selector, matches):
    assert label_selector("Pod p", "sel", selector).matches(LABELS) is matches


def test_null_selector_matches_nothing():
    assert not label_selector("Pod p", "sel", None).matches(LABELS)


@pytest.mark.parametrize(
    ("terms", "matches"),
    [
        ([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}], True),
        ([{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["5"]}]}], False),
        (
            [{"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}],
            False,
        ),  # not an integer
        ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}], True),
        ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}], False),
        ([{}], False),  # an empty term matches nothing
        ([], False),
        ([{}, {"matchExpressions": [{"key": "app", "operator": "Exists"}]}], True),  # terms are ORed
    ],
)
def test_node_selector(terms, matches):
    sel = node_selector("Pod p", "affinity", {"nodeSelectorTerms": terms})
    assert sel.matches(LABELS, "n1") is matches


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        ({"key": "a", "operator": "Near"}, "operator"),
        ({"key": "a", "operator": "In", "values": []}, "values"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "values"),
        ({"key": "a", "operator": "Gt", "values": ["x"]}, "values"),
        ({"operator": "Exists"}, "key"),
    ],
)
def test_bad_requirements_name_the_field(expr, field):
    with pytest.raises(ObjectError) as e:
        node_selector("Pod p", "aff", {"nodeSelectorTerms": [{"matchExpressions": [expr]}]})
    assert f"aff.nodeSelectorTerms[0].matchExpressions[0].{field}" in str(e.value)
