"""The one YAML/JSON reader: what PyYAML's safe_load accepts that it refuses, and why."""

from __future__ import annotations

import time

import pytest
import yaml

from harmonic import safeyaml


def _alias_bomb(levels: int, fan: int = 9) -> str:
    """a: &a [x, x, ...]; b: &b [*a, *a, ...]; ... (fan**levels nodes once expanded), under a key
    no reader looks at."""
    lines = ["ignored:", f"  l0: &l0 [{', '.join(['x'] * fan)}]"]
    for i in range(1, levels):
        lines.append(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]")
    return "\n".join(lines) + "\nname: ok\n"


#: name -> (text, a fragment of the refusal).
REFUSED = {
    "duplicate key": ("a: 1\nb: 2\na: 3\n", 'key "a" already set in map (line 3, column 1)'),
    "nested duplicate key": ("a:\n  b: 1\n  b: 2\n", 'key "b" already set in map (line 3, column 3)'),
    "alias bomb": (_alias_bomb(9), "excessive aliasing"),
    "5,000 levels of lists": ("x: " + "[" * 5000 + "]" * 5000, f"nested deeper than {safeyaml.MAX_DEPTH}"),
    "5,000 levels of maps": ("a:\n" + "".join(" " * i + "a:\n" for i in range(1, 5000)), "nested deeper"),
    "two documents": ("a: 1\n---\nb: 2\n", "expected a single document"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_the_reason(name):
    text, why = REFUSED[name]
    with pytest.raises(yaml.YAMLError) as e:
        safeyaml.load(text)
    assert why in safeyaml.problem(e.value)


@pytest.mark.parametrize("name", ["duplicate key", "alias bomb", "5,000 levels of lists"])
def test_pyyaml_alone_accepts_them(name):
    """What the refusals protect against: safe_load takes each (last key wins, or a RecursionError)."""
    text, _ = REFUSED[name]
    try:
        yaml.safe_load(text)
    except RecursionError:
        return


def test_the_bomb_is_refused_before_it_is_built():
    started = time.process_time()
    with pytest.raises(safeyaml.UnsafeYAMLError):
        safeyaml.load(_alias_bomb(12))
    # 9**12 nodes expanded would take hours; counting them memoised takes a moment.
    assert time.process_time() - started < 30


#: Accepted as safe_load accepts them.
ACCEPTED = {
    "empty": "",
    "a few aliases": "base: &b {cpu: 1}\nx: *b\ny: *b\n",
    "merge keys may override": "base: &b {cpu: 1, mem: 2}\nx:\n  <<: *b\n  cpu: 3\n",
    "deep but sane": "a:\n" + "".join(" " * i + "a:\n" for i in range(1, 50)) + " " * 50 + "b: 1\n",
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_like_safe_load(name):
    assert safeyaml.load(ACCEPTED[name]) == yaml.safe_load(ACCEPTED[name])


def test_load_all_reads_every_document():
    assert safeyaml.load_all("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"a": 1, "a": 2}', 'key "a" already set in map'),
        ('{"x": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper"),
        ('{"x": ' + "[" * 200 + "]" * 200 + "}", "nested deeper"),
    ],
)
def test_json_has_the_same_limits(text, why):
    with pytest.raises(yaml.YAMLError) as e:
        safeyaml.load_json(text)
    assert why in str(e.value)
