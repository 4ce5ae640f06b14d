import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.selectors import SelectorError, label_selector, node_selector, parse_selector

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


def _expr(key: str, op: str, *values: str) -> dict:
    e: dict = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


# What the API server's metav1.LabelSelector validation (LabelSelectorAsSelector: labels.NewRequirement,
# IsQualifiedName, IsValidLabelValue) accepts; every other selector is refused, with the field.
ACCEPTED = [
    pytest.param({}, id="empty selects everything"),
    pytest.param({"matchLabels": {"app": "web"}}, id="plain key"),
    pytest.param({"matchLabels": {"app.kubernetes.io/name": "web"}}, id="prefixed key"),
    pytest.param({"matchLabels": {"a" * 63: "v"}}, id="63-char name"),
    pytest.param({"matchLabels": {"k": ""}}, id="empty value"),
    pytest.param({"matchLabels": {"k": "A_b.c-9"}}, id="value with _ . -"),
    pytest.param({"matchLabels": {"k": "v" * 63}}, id="63-char value"),
    pytest.param({"matchExpressions": [_expr("k", "In", "a", "b")]}, id="In"),
    pytest.param({"matchExpressions": [_expr("k", "NotIn", "a")]}, id="NotIn"),
    pytest.param({"matchExpressions": [_expr("k", "Exists")]}, id="Exists"),
    pytest.param({"matchExpressions": [_expr("k", "DoesNotExist")]}, id="DoesNotExist"),
]

REFUSED = [
    pytest.param({"matchLabels": {"-app": "web"}}, "sel.matchLabels.-app", id="name starts with -"),
    pytest.param({"matchLabels": {"a" * 64: "v"}}, "sel.matchLabels." + "a" * 64, id="64-char name"),
    pytest.param({"matchLabels": {"a/b/c": "v"}}, "sel.matchLabels.a/b/c", id="two slashes"),
    pytest.param({"matchLabels": {"/app": "v"}}, "sel.matchLabels./app", id="empty prefix"),
    pytest.param(
        {"matchLabels": {"Example.com/app": "v"}}, "sel.matchLabels.Example.com/app", id="uppercase prefix"
    ),
    pytest.param({"matchLabels": {"app/": "v"}}, "sel.matchLabels.app/", id="empty name"),
    pytest.param({"matchLabels": {"k": "-bad"}}, "sel.matchLabels.k", id="value starts with -"),
    pytest.param({"matchLabels": {"k": "v" * 64}}, "sel.matchLabels.k", id="64-char value"),
    pytest.param({"matchLabels": {"k": "a b"}}, "sel.matchLabels.k", id="value with space"),
    pytest.param({"matchLabels": {"k": 5}}, "sel.matchLabels.k", id="value not a string"),
    pytest.param({"matchLabels": ["k"]}, "sel.matchLabels", id="matchLabels not a map"),
    pytest.param({"matchExpressions": [_expr("k", "In")]}, "sel.matchExpressions[0]", id="In without values"),
    pytest.param(
        {"matchExpressions": [_expr("k", "NotIn")]}, "sel.matchExpressions[0]", id="NotIn without values"
    ),
    pytest.param(
        {"matchExpressions": [_expr("k", "Exists", "x")]}, "sel.matchExpressions[0]", id="Exists with values"
    ),
    pytest.param(
        {"matchExpressions": [_expr("k", "DoesNotExist", "x")]},
        "sel.matchExpressions[0]",
        id="DoesNotExist with values",
    ),
    pytest.param(
        {"matchExpressions": [_expr("k", "Gt", "1")]}, "sel.matchExpressions[0]", id="Gt is a node operator"
    ),
    pytest.param(
        {"matchExpressions": [_expr("k", "in", "a")]}, "sel.matchExpressions[0]", id="lowercase operator"
    ),
    pytest.param({"matchExpressions": [_expr("", "Exists")]}, "sel.matchExpressions[0]", id="empty key"),
    pytest.param({"matchExpressions": [_expr("k", "In", "-a")]}, "sel.matchExpressions[0]", id="bad value"),
    pytest.param(
        {"matchExpressions": [{"key": "k", "operator": "In", "values": "a"}]},
        "sel.matchExpressions[0].values",
        id="values not a list",
    ),
    pytest.param({"matchExpressions": ["k"]}, "sel.matchExpressions[0]", id="expression not a map"),
    pytest.param(["k"], "sel", id="selector not a map"),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_the_selector_parser_accepts_what_the_api_server_accepts(raw):
    assert label_selector("Pod p", "sel", raw).matches({}) is (raw == {} or _only_absent(raw))


def _only_absent(raw) -> bool:
    return all(
        e["operator"] in ("NotIn", "DoesNotExist") for e in raw.get("matchExpressions", ())
    ) and not raw.get("matchLabels")


@pytest.mark.parametrize(("raw", "field"), REFUSED)
def test_the_selector_parser_refuses_what_the_api_server_refuses_naming_the_field(raw, field):
    with pytest.raises(ObjectError) as e:
        label_selector("Pod p", "sel", raw)
    assert str(e.value).startswith(f"Pod p: {field}: ")


def test_upstream_messages_word_for_word():
    with pytest.raises(SelectorError) as e:
        parse_selector({"matchExpressions": [_expr("k", "In")]})
    assert (
        str(e.value)
        == "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    )
    with pytest.raises(SelectorError) as e:
        parse_selector({"matchLabels": {"k": "-bad"}})
    assert str(e.value) == (
        'values[0][k]: Invalid value: "-bad": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
