"""ImageLocality's image-name normalisation (TestNormalizedImageName, image_locality_test.go)."""

from __future__ import annotations

import hashlib

import pytest

from harmonic.plugins.imagelocality import normalized_image_name

DIGEST = "sha256:" + hashlib.sha256(b"root").hexdigest()


@pytest.mark.parametrize(
    ("name", "image", "want"),
    [
        ("add :latest postfix 1", "root", "root:latest"),
        ("add :latest postfix 2", "gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("keep it as is 1", "root:tag", "root:tag"),
        ("keep it as is 2", "root@" + DIGEST, "root@" + DIGEST),
    ],
)
def test_normalized_image_name(name: str, image: str, want: str) -> None:
    assert normalized_image_name(image) == want
