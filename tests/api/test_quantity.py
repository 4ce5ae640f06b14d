from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harmonic.api.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(2**20)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1.5e-3", Fraction(3, 2000)),
        ("12e+2", Fraction(1200)),
        ("100n", Fraction(1, 10**7)),
        ("10u", Fraction(1, 10**5)),
        ("+3", Fraction(3)),
        ("-3", Fraction(-3)),
        (7, Fraction(7)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "1Ki2", "1 Gi", "Gi", "1.2.3", "1ki", "1KB", "--1", "1e", True, None, [1]]
)
def test_malformed(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("1", 1000, 1),
        ("100m", 100, 1),  # Value() rounds 0.1 up to 1
        ("1.0001", 1001, 2),  # MilliValue() rounds 1000.1 up
        ("0.5m", 1, 1),
        ("-1.5", -1500, -2),  # away from zero
        ("1Mi", 1048576000, 1048576),
    ],
)
def test_integer_views_round_away_from_zero(text, milli, units):
    q = parse_quantity(text)
    assert milli_value(q) == milli
    assert value(q) == units


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["", "k", "M", "Ki", "Mi", "Gi", "m"]))
def test_integer_and_suffix_roundtrip(n, suffix):
    mult = {"": 1, "k": 1000, "M": 10**6, "Ki": 1024, "Mi": 2**20, "Gi": 2**30, "m": Fraction(1, 1000)}[
        suffix
    ]
    assert parse_quantity(f"{n}{suffix}") == n * mult


@given(st.fractions(min_value=0, max_value=10**9))
def test_milli_value_is_ceiling(q):
    m = milli_value(q)
    assert m - 1 < q * 1000 <= m


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        # kube-apiserver 1.36 stores each of these (checked: "1e400" becomes "10e399", "1e-9" of memory
        # becomes "1e-3"); what matters here is how they round.
        ("0e400", 0, 0),
        ("1e-400", 1, 1),
        ("-1e-400", -1, -1),
        ("1e-9", 1, 1),
    ],
)
def test_extreme_exponents_keep_their_rounding(text, milli, units):
    q = parse_quantity(text)
    assert (milli_value(q), value(q)) == (milli, units)


@pytest.mark.parametrize("text", ["1e101", "1e400", "-3e99999999"])
def test_exponents_beyond_1e100_are_too_large(text):
    with pytest.raises(QuantityError, match="too large"):
        parse_quantity(text)
