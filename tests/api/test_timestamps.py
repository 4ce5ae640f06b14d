import pytest

from harmonic.api.errors import ObjectError
from harmonic.api.timestamps import parse_time


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.000000001Z", 1),
        ("1970-01-01T00:00:01.5Z", 1_500_000_000),
        ("2024-05-01T12:00:00Z", 1_714_564_800_000_000_000),
        ("2024-05-01T14:00:00+02:00", 1_714_564_800_000_000_000),
        ("2024-05-01T10:30:00-01:30", 1_714_564_800_000_000_000),
    ],
)
def test_rfc3339_to_nanoseconds(text, ns):
    assert parse_time("Pod default/p", "status.startTime", text) == ns


@pytest.mark.parametrize("text", ["yesterday", "2024-13-01T00:00:00Z", "2024-05-01", 12, None])
def test_bad_timestamps_name_the_field(text):
    with pytest.raises(ObjectError) as e:
        parse_time("Pod default/p", "status.startTime", text)
    assert str(e.value).startswith("Pod default/p: status.startTime: ")
